import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonWriteOptions,
  ScalarType,
  toJson,
} from "@bufbuild/protobuf";
import { base64Encode } from "@bufbuild/protobuf/wire";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { childMessageOf, IMPLICIT, LEGACY_REQUIRED, zeroTest } from "./field-presence.ts";

/**
 * A message's canonical JSON, character for character what protobuf-es's toJsonString writes with
 * the same options, or undefined when the message holds something this encoder leaves to
 * toJsonString (unknown fields that may be extensions, a value of an unexpected type), so the
 * caller encodes it that way and gets toJsonString's own answer or error.
 */
export type JsonEncoder = (message: object) => string | undefined;

/**
 * Compiles a JSON encoder for a message type, or returns undefined when the type holds a kind of
 * field it does not cover (proto2 required fields, wrapper and Struct fields, which protobuf-es
 * stores unboxed) or is itself a well-known type with its own JSON form.
 *
 * toJsonString builds a tree of JSON values and then has JSON.stringify walk it; this encoder
 * writes the text in one pass. Well-known types inside a message (Timestamp, Duration, Any, Value)
 * are written by toJson, so their rules live in one place.
 */
export function createJsonEncoder(
  desc: DescMessage,
  options: Partial<JsonWriteOptions> = {},
): JsonEncoder | undefined {
  if (hasOwnJson(desc) || !supported(desc, new Set())) return undefined;
  const opts: Options = {
    alwaysEmitImplicit: options.alwaysEmitImplicit === true,
    enumAsInteger: options.enumAsInteger === true,
    useProtoFieldName: options.useProtoFieldName === true,
    // With a registry, unknown fields may be extensions that toJsonString writes.
    extensions: options.registry !== undefined,
    write: options,
  };
  const write = compileMessage(desc, opts, new Map());
  return (message) => {
    try {
      return write(message as Fields);
    } catch {
      return undefined;
    }
  };
}

interface Options {
  readonly alwaysEmitImplicit: boolean;
  readonly enumAsInteger: boolean;
  readonly useProtoFieldName: boolean;
  readonly extensions: boolean;
  readonly write: Partial<JsonWriteOptions>;
}

/** Thrown for a value the encoder leaves to toJsonString. */
const FALLBACK = new Error("left to toJsonString");

type Fields = Record<string, unknown> & { $typeName?: string; $unknown?: unknown[] };
type WriteMessage = (message: Fields) => string;
/** A field's `"name":value`, or undefined when the field is not written. */
type WriteField = (message: Fields) => string | undefined;
type WriteValue = (value: unknown) => string;

/** The well-known types whose JSON is not an object of their fields. */
const OWN_JSON = new Set([
  "google.protobuf.Any",
  "google.protobuf.Timestamp",
  "google.protobuf.Duration",
  "google.protobuf.FieldMask",
  "google.protobuf.Struct",
  "google.protobuf.Value",
  "google.protobuf.ListValue",
]);

function hasOwnJson(desc: DescMessage): boolean {
  return OWN_JSON.has(desc.typeName) || isWrapperDesc(desc);
}

function supported(desc: DescMessage, seen: Set<DescMessage>): boolean {
  if (seen.has(desc)) return true;
  seen.add(desc);
  for (const field of desc.fields) {
    if (field.presence === LEGACY_REQUIRED) return false;
    if (field.jsonName === "__proto__" || field.name === "__proto__") return false;
    const child = childMessageOf(field);
    if (child === undefined) continue;
    if (child.typeName === "google.protobuf.Struct") return false;
    if (field.fieldKind === "message" && field.oneof === undefined && isWrapperDesc(child)) return false;
    // Well-known types with their own JSON are written by toJson; nothing inside them to check.
    if (!hasOwnJson(child) && !supported(child, seen)) return false;
  }
  return true;
}

function compileMessage(
  desc: DescMessage,
  opts: Options,
  compiled: Map<DescMessage, WriteMessage>,
): WriteMessage {
  const known = compiled.get(desc);
  if (known !== undefined) return known;
  const typeName = desc.typeName;
  const writers: WriteField[] = [];
  const write: WriteMessage = (message) => {
    if (message.$typeName !== typeName) throw FALLBACK;
    if (opts.extensions && message.$unknown !== undefined && message.$unknown.length > 0) throw FALLBACK;
    let out = "{";
    for (let i = 0; i < writers.length; i++) {
      const part = (writers[i] as WriteField)(message);
      if (part === undefined) continue;
      out += out.length === 1 ? part : `,${part}`;
    }
    return `${out}}`;
  };
  // Registered before the fields compile, so recursive types find it.
  compiled.set(desc, write);
  const sorted = desc.fields.concat().sort((a, b) => a.number - b.number);
  for (const field of sorted) writers.push(compileField(field, opts, compiled));
  return write;
}

function compileField(field: DescField, opts: Options, compiled: Map<DescMessage, WriteMessage>): WriteField {
  const name = field.localName;
  const key = `${JSON.stringify(opts.useProtoFieldName ? field.name : field.jsonName)}:`;
  switch (field.fieldKind) {
    case "list": {
      const write =
        field.listKind === "message"
          ? messageValue(field.message, opts, compiled)
          : field.listKind === "enum"
            ? enumValue(field.enum, opts)
            : scalarValue(field.scalar);
      return (message) => {
        const items = message[name] as unknown[];
        if (items.length === 0) return opts.alwaysEmitImplicit ? `${key}[]` : undefined;
        let out = `${key}[`;
        for (let i = 0; i < items.length; i++) out += i === 0 ? write(items[i]) : `,${write(items[i])}`;
        return `${out}]`;
      };
    }
    case "map": {
      const write =
        field.mapKind === "message"
          ? messageValue(field.message, opts, compiled)
          : field.mapKind === "enum"
            ? enumValue(field.enum, opts)
            : scalarValue(field.scalar);
      return (message) => {
        const record = message[name] as Record<string, unknown>;
        // Object.keys gives the order JSON.stringify writes the copy toJson makes.
        const keys = Object.keys(record);
        if (keys.length === 0) return opts.alwaysEmitImplicit ? `${key}{}` : undefined;
        let out = `${key}{`;
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i] as string;
          const entry = `${JSON.stringify(k)}:${write(record[k])}`;
          out += i === 0 ? entry : `,${entry}`;
        }
        return `${out}}`;
      };
    }
    default: {
      const write =
        field.fieldKind === "message"
          ? messageValue(field.message, opts, compiled)
          : field.fieldKind === "enum"
            ? enumValue(field.enum, opts)
            : scalarValue(field.scalar);
      if (field.oneof !== undefined) {
        const oneof = field.oneof.localName;
        return (message) => {
          const selected = message[oneof] as { case: unknown; value: unknown };
          return selected.case === name ? key + write(selected.value) : undefined;
        };
      }
      if (field.presence !== IMPLICIT) {
        return (message) => {
          const value = message[name];
          return value !== undefined && Object.hasOwn(message, name) ? key + write(value) : undefined;
        };
      }
      if (opts.alwaysEmitImplicit) return (message) => key + write(message[name]);
      const isZero = zeroTest(field);
      return (message) => {
        const value = message[name];
        return isZero(value) ? undefined : key + write(value);
      };
    }
  }
}

function messageValue(
  desc: DescMessage,
  opts: Options,
  compiled: Map<DescMessage, WriteMessage>,
): WriteValue {
  if (hasOwnJson(desc)) {
    return (value) => {
      if (value === null || typeof value !== "object") throw FALLBACK;
      return JSON.stringify(toJson(desc, value as never, opts.write));
    };
  }
  const write = compileMessage(desc, opts, compiled);
  return (value) => {
    // An unset message value is written as an empty message (protobuf-es's toMessage); leave
    // anything that is not a message object to toJsonString.
    if (value === null || typeof value !== "object") throw FALLBACK;
    return write(value as Fields);
  };
}

function enumValue(desc: DescEnum, opts: Options): WriteValue {
  if (desc.typeName === "google.protobuf.NullValue") {
    return (value) => {
      if (typeof value !== "number") throw FALLBACK;
      return "null";
    };
  }
  const names = new Map(desc.values.map((v) => [v.number, JSON.stringify(v.jsonName)]));
  return (value) => {
    if (typeof value !== "number" || !Number.isFinite(value)) throw FALLBACK;
    if (opts.enumAsInteger) return String(value);
    return names.get(value) ?? String(value);
  };
}

/**
 * A scalar's JSON, as toJson gives it and JSON.stringify writes it. Only the value types
 * protobuf-es stores are taken; anything else is left to toJsonString.
 */
function scalarValue(type: ScalarType | undefined): WriteValue {
  switch (type) {
    case ScalarType.INT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT32:
      return (value) => {
        // JSON.stringify writes a non-finite number as null; leave that to it.
        if (typeof value !== "number" || !Number.isFinite(value)) throw FALLBACK;
        return String(value);
      };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (value) => {
        if (typeof value !== "number") throw FALLBACK;
        if (Number.isFinite(value)) return String(value);
        if (Number.isNaN(value)) return '"NaN"';
        return value > 0 ? '"Infinity"' : '"-Infinity"';
      };
    case ScalarType.STRING:
      return (value) => {
        if (typeof value !== "string") throw FALLBACK;
        return JSON.stringify(value);
      };
    case ScalarType.BOOL:
      return (value) => {
        if (typeof value !== "boolean") throw FALLBACK;
        return value ? "true" : "false";
      };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return (value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        return `"${value.toString()}"`;
      };
    case ScalarType.BYTES:
      return (value) => {
        if (!(value instanceof Uint8Array)) throw FALLBACK;
        return `"${base64Encode(value)}"`;
      };
    default:
      throw new Error(`unexpected scalar type ${type}`);
  }
}
