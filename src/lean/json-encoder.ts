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
import { rememberFrozen } from "./deep-freeze.ts";
import { childMessageOf, everyField } from "./every-field.ts";
import { IMPLICIT, LEGACY_REQUIRED, zeroTest } from "./field-presence.ts";
import { ScratchBuffer } from "./scratch-buffer.ts";

/**
 * A message's canonical JSON as UTF-8, byte for byte what protobuf-es's toJsonString writes with
 * the same options, or undefined when the message holds something this encoder leaves to
 * toJsonString (unknown fields that may be extensions, a value of an unexpected type), so the
 * caller encodes it that way and gets toJsonString's own answer or error.
 */
export type JsonEncoder = (message: object) => Uint8Array | undefined;

/**
 * Compiles a JSON encoder for a message type, or returns undefined when the type holds a kind of
 * field it does not cover (proto2 required fields, wrapper and Struct fields, which protobuf-es
 * stores unboxed) or is itself a well-known type with its own JSON form.
 *
 * toJsonString builds a tree of JSON values, has JSON.stringify walk it into a string, and the
 * string is encoded once more into bytes. This encoder writes the bytes in one pass into a scratch
 * buffer it keeps: a 1.7 KB answer allocates its copy and little else, where text built by string
 * concatenation allocated several times its size. Well-known types inside a message (Timestamp,
 * Duration, Any, Value) are written by toJson, so their rules live in one place.
 */
export function createJsonEncoder(
  desc: DescMessage,
  options: Partial<JsonWriteOptions> = {},
): JsonEncoder | undefined {
  if (hasOwnJson(desc) || !everyField(desc, covered, (child) => !hasOwnJson(child))) return undefined;
  const opts: Options = {
    alwaysEmitImplicit: options.alwaysEmitImplicit === true,
    enumAsInteger: options.enumAsInteger === true,
    useProtoFieldName: options.useProtoFieldName === true,
    // With a registry, unknown fields may be extensions that toJsonString writes.
    extensions: options.registry !== undefined,
    write: options,
  };
  const write = compileMessage(desc, opts, new Map());
  const scratch = new ScratchBuffer();
  return (message) => scratch.encode(write, message as Fields);
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
type WriteMessage = (w: ScratchBuffer, message: Fields) => void;
/** Writes a field's `"name":value` (after a comma unless `first`); false when it is not written. */
type WriteField = (w: ScratchBuffer, message: Fields, first: boolean) => boolean;
type WriteValue = (w: ScratchBuffer, value: unknown) => void;

const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

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

/**
 * Whether a field is of a kind this encoder covers (its message type is checked on its own, unless
 * it is a well-known type with its own JSON, which toJson writes).
 */
function covered(field: DescField): boolean {
  if (field.presence === LEGACY_REQUIRED) return false;
  if (field.jsonName === "__proto__" || field.name === "__proto__") return false;
  const child = childMessageOf(field);
  if (child === undefined) return true;
  // Stored as JsonObject, not as a message (protobuf-es's localMessageMapper).
  if (child.typeName === "google.protobuf.Struct") return false;
  // Singular wrapper fields are stored unwrapped.
  return !(field.fieldKind === "message" && field.oneof === undefined && isWrapperDesc(child));
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
  const write: WriteMessage = (w, message) => {
    if (message.$typeName !== typeName) throw FALLBACK;
    if (opts.extensions && message.$unknown !== undefined && message.$unknown.length > 0) throw FALLBACK;
    w.ascii("{");
    let first = true;
    for (let i = 0; i < writers.length; i++) {
      if ((writers[i] as WriteField)(w, message, first)) first = false;
    }
    w.ascii("}");
  };
  // Registered before the fields compile, so recursive types find it.
  compiled.set(desc, write);
  const sorted = desc.fields.concat().sort((a, b) => a.number - b.number);
  for (const field of sorted) writers.push(compileField(field, opts, compiled));
  return write;
}

function compileField(field: DescField, opts: Options, compiled: Map<DescMessage, WriteMessage>): WriteField {
  const name = field.localName;
  const keyBytes = Buffer.from(`${JSON.stringify(opts.useProtoFieldName ? field.name : field.jsonName)}:`);
  const key = (w: ScratchBuffer, first: boolean) => {
    if (!first) {
      w.ensure(1);
      w.buf[w.pos++] = COMMA;
    }
    w.raw(keyBytes);
  };
  switch (field.fieldKind) {
    case "list": {
      const write = valueWriter(field, field.listKind, opts, compiled);
      return (w, message, first) => {
        const items = message[name] as unknown[];
        if (items.length === 0 && !opts.alwaysEmitImplicit) return false;
        key(w, first);
        w.ascii("[");
        for (let i = 0; i < items.length; i++) {
          if (i > 0) w.ascii(",");
          write(w, items[i]);
        }
        w.ascii("]");
        return true;
      };
    }
    case "map": {
      const write = valueWriter(field, field.mapKind, opts, compiled);
      return (w, message, first) => {
        const record = message[name] as Record<string, unknown>;
        // Object.keys gives the order JSON.stringify writes the copy toJson makes.
        const keys = Object.keys(record);
        if (keys.length === 0 && !opts.alwaysEmitImplicit) return false;
        key(w, first);
        w.ascii("{");
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i] as string;
          if (i > 0) w.ascii(",");
          jsonString(w, k);
          w.ascii(":");
          write(w, record[k]);
        }
        w.ascii("}");
        return true;
      };
    }
    default: {
      const write = valueWriter(field, field.fieldKind, opts, compiled);
      if (field.oneof !== undefined) {
        const oneof = field.oneof.localName;
        return (w, message, first) => {
          const selected = message[oneof] as { case: unknown; value: unknown };
          if (selected.case !== name) return false;
          key(w, first);
          write(w, selected.value);
          return true;
        };
      }
      if (field.presence !== IMPLICIT) {
        return (w, message, first) => {
          const value = message[name];
          if (value === undefined || !Object.hasOwn(message, name)) return false;
          key(w, first);
          write(w, value);
          return true;
        };
      }
      const isZero = opts.alwaysEmitImplicit ? () => false : zeroTest(field);
      return (w, message, first) => {
        const value = message[name];
        if (isZero(value)) return false;
        key(w, first);
        write(w, value);
        return true;
      };
    }
  }
}

/** The writer of one value of a field: the field itself, a list item or a map value. */
function valueWriter(
  field: DescField,
  kind: "message" | "enum" | "scalar",
  opts: Options,
  compiled: Map<DescMessage, WriteMessage>,
): WriteValue {
  if (kind === "message") return messageValue(field.message as DescMessage, opts, compiled);
  if (kind === "enum") return enumValue(field.enum as DescEnum, opts);
  return scalarValue(field.scalar);
}

function messageValue(
  desc: DescMessage,
  opts: Options,
  compiled: Map<DescMessage, WriteMessage>,
): WriteValue {
  if (hasOwnJson(desc)) {
    return (w, value) => {
      if (value === null || typeof value !== "object") throw FALLBACK;
      w.utf8(JSON.stringify(toJson(desc, value as never, opts.write)));
    };
  }
  const compiledWrite = compileMessage(desc, opts, compiled);
  // A cached price entry, handed out again and again, is written once per encoder.
  const write = rememberFrozen<ScratchBuffer>((w, value) => compiledWrite(w, value as Fields));
  return (w, value) => {
    // An unset message value is written as an empty message (protobuf-es's toMessage); leave
    // anything that is not a message object to toJsonString.
    if (value === null || typeof value !== "object") throw FALLBACK;
    write(w, value);
  };
}

function enumValue(desc: DescEnum, opts: Options): WriteValue {
  if (desc.typeName === "google.protobuf.NullValue") {
    return (w, value) => {
      if (typeof value !== "number") throw FALLBACK;
      w.ascii("null");
    };
  }
  const names = new Map(desc.values.map((v) => [v.number, Buffer.from(JSON.stringify(v.jsonName))]));
  return (w, value) => {
    if (typeof value !== "number" || !Number.isFinite(value)) throw FALLBACK;
    const known = opts.enumAsInteger ? undefined : names.get(value);
    if (known === undefined) w.ascii(String(value));
    else w.raw(known);
  };
}

/**
 * A string as JSON.stringify writes it. Printable ASCII without quotes or backslashes, nearly all
 * text here, is copied as it is; anything else goes through JSON.stringify.
 */
function jsonString(w: ScratchBuffer, text: string): void {
  const length = text.length;
  w.ensure(length + 2);
  const buf = w.buf;
  let pos = w.pos;
  buf[pos++] = QUOTE;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === QUOTE || code === BACKSLASH) {
      w.utf8(JSON.stringify(text));
      return;
    }
    buf[pos++] = code;
  }
  buf[pos++] = QUOTE;
  w.pos = pos;
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
      return (w, value) => {
        // JSON.stringify writes a non-finite number as null; leave that to it.
        if (typeof value !== "number" || !Number.isFinite(value)) throw FALLBACK;
        w.ascii(String(value));
      };
    case ScalarType.FLOAT:
    case ScalarType.DOUBLE:
      return (w, value) => {
        if (typeof value !== "number") throw FALLBACK;
        if (Number.isFinite(value)) w.ascii(String(value));
        else if (Number.isNaN(value)) w.ascii('"NaN"');
        else w.ascii(value > 0 ? '"Infinity"' : '"-Infinity"');
      };
    case ScalarType.STRING:
      return (w, value) => {
        if (typeof value !== "string") throw FALLBACK;
        jsonString(w, value);
      };
    case ScalarType.BOOL:
      return (w, value) => {
        if (typeof value !== "boolean") throw FALLBACK;
        w.ascii(value ? "true" : "false");
      };
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        w.ascii(`"${value.toString()}"`);
      };
    case ScalarType.BYTES:
      return (w, value) => {
        if (!(value instanceof Uint8Array)) throw FALLBACK;
        w.ascii(`"${base64Encode(value)}"`);
      };
    default:
      throw new Error(`unexpected scalar type ${type}`);
  }
}
