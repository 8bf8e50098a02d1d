import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonValue,
  ScalarType,
} from "@bufbuild/protobuf";

/**
 * Text from a URL (a path variable or a query parameter) as the proto3 JSON value of a field, so
 * that the request built from it reads like a JSON body. Each value is checked against the field's
 * type here, because a wrong one must be reported under the parameter's name (`limit must be an
 * integer`), not as a failure to decode the whole request.
 */

/** The field types a URL can carry: scalars, enums, and well-known types written as one string. */
export type UrlFieldType =
  | { readonly kind: "scalar"; readonly scalar: ScalarType }
  | { readonly kind: "enum"; readonly enum: DescEnum }
  | { readonly kind: "wkt"; readonly message: DescMessage; readonly scalar?: ScalarType };

/** Well-known messages whose JSON form is one string, and the wrappers (their JSON is the value). */
const STRING_WKTS = new Set([
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
]);

/** The URL type of a field's values (a list's elements), or undefined when a URL cannot carry it. */
export function urlFieldTypeOf(field: DescField): UrlFieldType | undefined {
  const kind = field.fieldKind === "list" ? field.listKind : field.fieldKind;
  if (kind === "scalar") return { kind, scalar: field.scalar as ScalarType };
  if (kind === "enum") return { kind, enum: field.enum as DescEnum };
  if (kind !== "message" || field.message === undefined) return undefined;
  const message = field.message;
  if (STRING_WKTS.has(message.typeName)) return { kind: "wkt", message };
  const wrapped = message.typeName.startsWith("google.protobuf.") && message.typeName.endsWith("Value");
  const value = message.fields[0];
  if (wrapped && message.fields.length === 1 && value?.fieldKind === "scalar")
    return { kind: "wkt", message, scalar: value.scalar };
  return undefined;
}

const INT = /^-?[0-9]+$/;
const UINT = /^[0-9]+$/;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const UINT32_MAX = 2 ** 32 - 1;

/**
 * The JSON value for `text`, or a description of the rule it breaks ("must be an integer"),
 * worded to follow the parameter's name in an invalid_argument message.
 */
export function jsonValueFromText(type: UrlFieldType, text: string): { value: JsonValue } | { rule: string } {
  if (type.kind === "enum") {
    if (type.enum.values.some((v) => v.name === text)) return { value: text };
    if (INT.test(text) && type.enum.values.some((v) => v.number === Number(text)))
      return { value: Number(text) };
    return { rule: `must be one of ${type.enum.values.map((v) => v.name).join(" or ")}` };
  }
  const scalar = type.kind === "scalar" ? type.scalar : type.scalar;
  if (scalar === undefined) return { value: text }; // Timestamp and friends: checked by the JSON reader
  switch (scalar) {
    case ScalarType.STRING:
      return { value: text };
    case ScalarType.BOOL:
      return text === "true" || text === "false"
        ? { value: text === "true" }
        : { rule: "must be true or false" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return INT.test(text) && Number(text) >= INT32_MIN && Number(text) <= INT32_MAX
        ? { value: Number(text) }
        : { rule: `must be an integer from ${INT32_MIN} to ${INT32_MAX}` };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return UINT.test(text) && Number(text) <= UINT32_MAX
        ? { value: Number(text) }
        : { rule: `must be an integer from 0 to ${UINT32_MAX}` };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return INT.test(text) && BigInt.asIntN(64, BigInt(text)) === BigInt(text)
        ? { value: text }
        : { rule: "must be a 64-bit integer" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return UINT.test(text) && BigInt.asUintN(64, BigInt(text)) === BigInt(text)
        ? { value: text }
        : { rule: "must be an unsigned 64-bit integer" };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE: {
      if (text === "NaN" || text === "Infinity" || text === "-Infinity") return { value: text };
      const n = text.trim() === "" ? Number.NaN : Number(text);
      return Number.isFinite(n) ? { value: n } : { rule: "must be a number" };
    }
    case ScalarType.BYTES:
      return /^[A-Za-z0-9+/_-]*={0,2}$/.test(text) ? { value: text } : { rule: "must be base64" };
  }
}
