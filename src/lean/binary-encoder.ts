import { type DescField, type DescMessage, protoInt64, ScalarType } from "@bufbuild/protobuf";
import { isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { rememberFrozen } from "./deep-freeze.ts";
import { childMessageOf, everyField } from "./every-field.ts";
import { IMPLICIT, LEGACY_REQUIRED, zeroTest } from "./field-presence.ts";
import { ScratchBuffer } from "./scratch-buffer.ts";

/**
 * A message's protobuf binary encoding, byte for byte what protobuf-es's toBinary writes, or
 * undefined when the message holds something this encoder leaves to toBinary (unknown fields, a
 * value of an unexpected type, a value out of range), so the caller encodes it that way and
 * gets toBinary's own answer or error.
 */
export type BinaryEncoder = (message: object) => Uint8Array | undefined;

/**
 * Compiles a binary encoder for a message type, or returns undefined when the type holds a kind of
 * field it does not cover (groups, proto2 required fields, wrapper and Struct fields, which
 * protobuf-es stores unboxed, maps with non-string keys).
 *
 * toBinary makes a fresh writer per message that starts at 128 bytes and doubles, each time a new
 * zero-filled ArrayBuffer, then copies the result out once more: a 2 KB answer costs five
 * allocations and the garbage collection after them, a fifth of a gRPC call's CPU. This encoder
 * writes into one scratch buffer it keeps, and copies the result into a pooled Buffer.
 */
export function createBinaryEncoder(desc: DescMessage): BinaryEncoder | undefined {
  const compiled = new Map<DescMessage, WriteMessage>();
  if (!everyField(desc, covered)) return undefined;
  const write = compileMessage(desc, compiled);
  const writer = new Writer();
  return (message) => writer.encode(write, message as Fields);
}

/** Thrown for a value the encoder leaves to toBinary. */
const FALLBACK = new Error("left to toBinary");

const WIRE_VARINT = 0;
const WIRE_BIT64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_BIT32 = 5;

const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;
const UINT32_MAX = 0xffffffff;
const FLOAT32_MAX = 3.4028234663852886e38;

type Fields = Record<string, unknown> & { $typeName?: string; $unknown?: unknown[] };
type WriteMessage = (w: Writer, message: Fields) => void;
type WriteField = (w: Writer, message: Fields) => void;
type WriteValue = (w: Writer, value: unknown) => void;

class Writer extends ScratchBuffer {
  uint32(value: number): void {
    this.ensure(5);
    const buf = this.buf;
    let v = value >>> 0;
    while (v > 0x7f) {
      buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  int32(value: number): void {
    if (value >= 0) {
      this.uint32(value);
      return;
    }
    // Negative: sign-extended to 64 bits, ten bytes.
    this.ensure(10);
    let v = value;
    for (let i = 0; i < 9; i++) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v >>= 7;
    }
    this.buf[this.pos++] = 1;
  }

  /** A 64-bit varint from its two 32-bit halves (protobuf-es's varint64write). */
  varint64(lo: number, hi: number): void {
    this.ensure(10);
    const buf = this.buf;
    let low = lo >>> 0;
    let high = hi >>> 0;
    while (high > 0 || low > 0x7f) {
      buf[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low;
  }

  fixed64(lo: number, hi: number): void {
    this.ensure(8);
    this.buf.writeUInt32LE(lo >>> 0, this.pos);
    this.buf.writeUInt32LE(hi >>> 0, this.pos + 4);
    this.pos += 8;
  }

  string(value: string): void {
    const length = value.length;
    // A UTF-16 code unit takes at most three UTF-8 bytes; the prefix at most five.
    this.ensure(length * 3 + 5);
    const buf = this.buf;
    if (length < 0x80) {
      // Short ASCII, the common case: the prefix is the length, one byte.
      let pos = this.pos + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = value.charCodeAt(i);
        if (code > 0x7f) break;
        buf[pos++] = code;
      }
      if (i === length) {
        buf[this.pos] = length;
        this.pos = pos;
        return;
      }
    }
    // Guess the prefix from the UTF-16 length, encode, and shift if the guess was short.
    const guess = varint32Size(length);
    const start = this.pos;
    const written = buf.write(value, start + guess, "utf8");
    const size = varint32Size(written);
    if (size !== guess) buf.copyWithin(start + size, start + guess, start + guess + written);
    this.uint32(written);
    this.pos += written;
  }

  bytes(value: Uint8Array): void {
    this.uint32(value.byteLength);
    this.raw(value);
  }

  /** Reserves a one-byte length prefix for what follows; `join` writes it (protobuf-es's fork). */
  fork(): number {
    this.ensure(1);
    return this.pos++;
  }

  join(start: number): void {
    const length = this.pos - start - 1;
    const size = varint32Size(length);
    if (size > 1) {
      this.ensure(size - 1);
      this.buf.copyWithin(start + size, start + 1, this.pos);
    }
    const end = this.pos + size - 1;
    this.pos = start;
    this.uint32(length);
    this.pos = end;
  }
}

function varint32Size(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** Whether a field is of a kind this encoder covers (its message type is checked on its own). */
function covered(field: DescField, parent: DescMessage): boolean {
  if (field.presence === LEGACY_REQUIRED) return false;
  if (field.fieldKind === "map" && field.mapKey !== ScalarType.STRING) return false;
  const child = childMessageOf(field);
  if (child === undefined) return true;
  // Groups (proto2, or editions' delimited encoding).
  if ("delimitedEncoding" in field && field.delimitedEncoding === true) return false;
  // Stored as JsonObject, not as a message (protobuf-es's localMessageMapper).
  if (child.typeName === "google.protobuf.Struct" && parent.typeName !== "google.protobuf.Value")
    return false;
  // Singular wrapper fields are stored unwrapped.
  return !(field.fieldKind === "message" && field.oneof === undefined && isWrapperDesc(child));
}

function compileMessage(desc: DescMessage, compiled: Map<DescMessage, WriteMessage>): WriteMessage {
  const known = compiled.get(desc);
  if (known !== undefined) return known;
  const typeName = desc.typeName;
  const writers: WriteField[] = [];
  const write: WriteMessage = (w, message) => {
    if (message.$typeName !== typeName) throw FALLBACK;
    const unknown = message.$unknown;
    if (unknown !== undefined && unknown.length > 0) throw FALLBACK;
    for (let i = 0; i < writers.length; i++) (writers[i] as WriteField)(w, message);
  };
  // Registered before the fields compile, so recursive types find it.
  compiled.set(desc, write);
  const sorted = desc.fields.concat().sort((a, b) => a.number - b.number);
  for (const field of sorted) writers.push(compileField(field, compiled));
  return write;
}

function compileField(field: DescField, compiled: Map<DescMessage, WriteMessage>): WriteField {
  const name = field.localName;
  const no = field.number;
  switch (field.fieldKind) {
    case "list": {
      if (field.listKind === "message") {
        const child = messageValue(no, compileMessage(field.message, compiled));
        return (w, message) => {
          const items = message[name] as unknown[];
          for (let i = 0; i < items.length; i++) child(w, items[i]);
        };
      }
      const type = field.listKind === "enum" ? ScalarType.INT32 : field.scalar;
      const write = scalarValue(type);
      if (field.packed) {
        const tag = ((no << 3) | WIRE_LENGTH_DELIMITED) >>> 0;
        return (w, message) => {
          const items = message[name] as unknown[];
          if (items.length === 0) return;
          w.uint32(tag);
          const start = w.fork();
          for (let i = 0; i < items.length; i++) write(w, items[i]);
          w.join(start);
        };
      }
      const tag = ((no << 3) | wireTypeOf(type)) >>> 0;
      return (w, message) => {
        const items = message[name] as unknown[];
        for (let i = 0; i < items.length; i++) {
          w.uint32(tag);
          write(w, items[i]);
        }
      };
    }
    case "map": {
      const tag = ((no << 3) | WIRE_LENGTH_DELIMITED) >>> 0;
      const keyTag = (1 << 3) | WIRE_LENGTH_DELIMITED;
      let writeValue: WriteValue;
      if (field.mapKind === "message") {
        writeValue = messageValue(2, compileMessage(field.message, compiled));
      } else {
        const type = field.mapKind === "enum" ? ScalarType.INT32 : field.scalar;
        const valueTag = ((2 << 3) | wireTypeOf(type)) >>> 0;
        const write = scalarValue(type);
        writeValue = (w, value) => {
          w.uint32(valueTag);
          write(w, value);
        };
      }
      return (w, message) => {
        const record = message[name] as Record<string, unknown>;
        const keys = Object.keys(record);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i] as string;
          w.uint32(tag);
          const start = w.fork();
          w.uint32(keyTag);
          w.string(key);
          writeValue(w, record[key]);
          w.join(start);
        }
      };
    }
    default: {
      const write = singularValue(field, compiled);
      if (field.oneof !== undefined) {
        const oneof = field.oneof.localName;
        return (w, message) => {
          const selected = message[oneof] as { case: unknown; value: unknown };
          if (selected.case === name) write(w, selected.value);
        };
      }
      if (field.presence !== IMPLICIT) {
        return (w, message) => {
          const value = message[name];
          if (value !== undefined && Object.hasOwn(message, name)) write(w, value);
        };
      }
      // Implicit presence: written when not the zero value, as protobuf-es decides it.
      const isZero = zeroTest(field);
      return (w, message) => {
        const value = message[name];
        if (!isZero(value)) write(w, value);
      };
    }
  }
}

/** A singular scalar, enum or message value with its tag. */
function singularValue(field: DescField, compiled: Map<DescMessage, WriteMessage>): WriteValue {
  if (field.fieldKind === "message")
    return messageValue(field.number, compileMessage(field.message, compiled));
  const type = field.fieldKind === "enum" ? ScalarType.INT32 : (field.scalar as ScalarType);
  const tag = ((field.number << 3) | wireTypeOf(type)) >>> 0;
  const write = scalarValue(type);
  return (w, value) => {
    w.uint32(tag);
    write(w, value);
  };
}

function messageValue(no: number, write: WriteMessage): WriteValue {
  const tag = ((no << 3) | WIRE_LENGTH_DELIMITED) >>> 0;
  // A deeply frozen message's field (tag, length and body) is written once (see deep-freeze.ts).
  const field = rememberFrozen<Writer>((w, value) => {
    w.uint32(tag);
    const start = w.fork();
    write(w, value as Fields);
    w.join(start);
  });
  return (w, value) => {
    // An unset message value is written as an empty message (protobuf-es's toMessage); leave
    // anything that is not a message object to toBinary.
    if (value === null || typeof value !== "object") throw FALLBACK;
    field(w, value);
  };
}

function wireTypeOf(type: ScalarType): number {
  switch (type) {
    case ScalarType.BYTES:
    case ScalarType.STRING:
      return WIRE_LENGTH_DELIMITED;
    case ScalarType.DOUBLE:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return WIRE_BIT64;
    case ScalarType.FIXED32:
    case ScalarType.SFIXED32:
    case ScalarType.FLOAT:
      return WIRE_BIT32;
    default:
      return WIRE_VARINT;
  }
}

function isInt32(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value <= INT32_MAX && value >= INT32_MIN;
}

function isUint32(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value <= UINT32_MAX && value >= 0;
}

/**
 * A bare scalar value. Only the value types protobuf-es stores are taken (numbers in range,
 * bigints for 64-bit integers); anything else is left to toBinary, which coerces or refuses it.
 */
function scalarValue(type: ScalarType): WriteValue {
  switch (type) {
    case ScalarType.STRING:
      return (w, value) => {
        if (typeof value !== "string") throw FALLBACK;
        w.string(value);
      };
    case ScalarType.BOOL:
      return (w, value) => {
        if (typeof value !== "boolean") throw FALLBACK;
        w.ensure(1);
        w.buf[w.pos++] = value ? 1 : 0;
      };
    case ScalarType.DOUBLE:
      return (w, value) => {
        if (typeof value !== "number") throw FALLBACK;
        w.ensure(8);
        w.buf.writeDoubleLE(value, w.pos);
        w.pos += 8;
      };
    case ScalarType.FLOAT:
      return (w, value) => {
        if (typeof value !== "number" || (Number.isFinite(value) && Math.abs(value) > FLOAT32_MAX)) {
          throw FALLBACK;
        }
        w.ensure(4);
        w.buf.writeFloatLE(value, w.pos);
        w.pos += 4;
      };
    case ScalarType.INT32:
      return (w, value) => {
        if (!isInt32(value)) throw FALLBACK;
        w.int32(value);
      };
    case ScalarType.UINT32:
      return (w, value) => {
        if (!isUint32(value)) throw FALLBACK;
        w.uint32(value);
      };
    case ScalarType.SINT32:
      return (w, value) => {
        if (!isInt32(value)) throw FALLBACK;
        w.uint32(((value << 1) ^ (value >> 31)) >>> 0);
      };
    case ScalarType.FIXED32:
      return (w, value) => {
        if (!isUint32(value)) throw FALLBACK;
        w.ensure(4);
        w.buf.writeUInt32LE(value, w.pos);
        w.pos += 4;
      };
    case ScalarType.SFIXED32:
      return (w, value) => {
        if (!isInt32(value)) throw FALLBACK;
        w.ensure(4);
        w.buf.writeInt32LE(value, w.pos);
        w.pos += 4;
      };
    case ScalarType.INT64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        const { lo, hi } = protoInt64.enc(value);
        w.varint64(lo, hi);
      };
    case ScalarType.UINT64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        const { lo, hi } = protoInt64.uEnc(value);
        w.varint64(lo, hi);
      };
    case ScalarType.SINT64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        const { lo, hi } = protoInt64.enc(value);
        // zigzag: shift left one, and flip every bit of a negative number.
        const sign = hi >> 31;
        w.varint64(((lo << 1) ^ sign) >>> 0, (((hi << 1) | (lo >>> 31)) ^ sign) >>> 0);
      };
    case ScalarType.FIXED64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        const { lo, hi } = protoInt64.uEnc(value);
        w.fixed64(lo, hi);
      };
    case ScalarType.SFIXED64:
      return (w, value) => {
        if (typeof value !== "bigint") throw FALLBACK;
        const { lo, hi } = protoInt64.enc(value);
        w.fixed64(lo, hi);
      };
    case ScalarType.BYTES:
      return (w, value) => {
        if (!(value instanceof Uint8Array)) throw FALLBACK;
        w.bytes(value);
      };
  }
}
