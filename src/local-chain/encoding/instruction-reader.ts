import { getBase58Decoder } from "@solana/kit";

/** A parsed instruction's `parsed` field: its type and what it names. */
export type ParsedInfo = { type: string; info: Record<string, unknown> };
/** A program's parser: the parsed instruction, or undefined when Agave's would refuse it. */
export type ProgramParser = (data: Uint8Array, accounts: readonly string[]) => ParsedInfo | undefined;

const base58 = getBase58Decoder();
export const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Little-endian reads that throw RangeError past the end, as a deserializer fails. */
export function reader(data: Uint8Array) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  return {
    get left() {
      return data.length - at;
    },
    u8: () => view.getUint8(at++),
    u16() {
      const v = view.getUint16(at, true);
      at += 2;
      return v;
    },
    u32() {
      const v = view.getUint32(at, true);
      at += 4;
      return v;
    },
    u64() {
      const v = view.getBigUint64(at, true);
      at += 8;
      return v;
    },
    pubkey() {
      if (at + 32 > data.length) throw new RangeError("short pubkey");
      const v = base58.decode(data.subarray(at, at + 32));
      at += 32;
      return v;
    },
    /** bincode's String: a u64 length, then UTF-8. */
    string() {
      const length = Number(this.u64());
      if (at + length > data.length) throw new RangeError("short string");
      const v = utf8.decode(data.subarray(at, at + length));
      at += length;
      return v;
    },
    rest() {
      const v = data.subarray(at);
      at = data.length;
      return v;
    },
  };
}
