import { type DescField, ScalarType } from "@bufbuild/protobuf";

// protobuf-es's feature values (google.protobuf.FeatureSet.FieldPresence).
export const IMPLICIT = 2;
export const LEGACY_REQUIRED = 3;

/**
 * Whether a field of implicit presence holds its zero value, so that protobuf-es leaves it out
 * (of binary always, of JSON unless asked to emit it), decided as protobuf-es decides it.
 */
export function zeroTest(field: DescField): (value: unknown) => boolean {
  if (field.fieldKind === "enum") {
    const zero = field.enum.values[0]?.number;
    return (value) => value === zero;
  }
  switch (field.scalar) {
    case ScalarType.BOOL:
      return (value) => value === false;
    case ScalarType.STRING:
      return (value) => value === "";
    case ScalarType.BYTES:
      return (value) => value instanceof Uint8Array && value.byteLength === 0;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (value) => Object.is(value, 0);
    default:
      // Loose, as protobuf-es compares: 0, 0n and "0".
      // biome-ignore lint/suspicious/noDoubleEquals: the comparison protobuf-es makes
      return (value) => value == 0;
  }
}
