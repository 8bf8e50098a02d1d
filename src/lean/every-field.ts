import type { DescField, DescMessage } from "@bufbuild/protobuf";

/** The message type a field holds (singly, in a list or as map values), if any. */
export function childMessageOf(field: DescField): DescMessage | undefined {
  return field.fieldKind === "message" ||
    (field.fieldKind === "list" && field.listKind === "message") ||
    (field.fieldKind === "map" && field.mapKind === "message")
    ? field.message
    : undefined;
}

/**
 * Whether `accepts` holds for every field of `desc` and of every message type reachable from it,
 * each type visited once (recursive types included). A child type for which `descend` is false is
 * not looked into: its own rules apply to it (a well-known type with its own JSON, say).
 */
export function everyField(
  desc: DescMessage,
  accepts: (field: DescField, parent: DescMessage) => boolean,
  descend: (child: DescMessage) => boolean = () => true,
  seen: Set<DescMessage> = new Set(),
): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  for (const field of desc.fields) {
    if (!accepts(field, desc)) return false;
    const child = childMessageOf(field);
    if (child !== undefined && descend(child) && !everyField(child, accepts, descend, seen)) return false;
  }
  return true;
}
