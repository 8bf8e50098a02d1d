import type { Address } from "@solana/kit";

/**
 * Base58 for 32-byte keys without BigInt. Kit's codec turns every address into a BigInt and
 * divides it by 58 one digit at a time; the profile of the swap path showed it among the service's
 * largest costs (each run derives, compares and encodes dozens of addresses). This is the plain
 * byte-array algorithm Bitcoin's reference code uses: small integers only.
 */
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGIT[ALPHABET.charCodeAt(i)] = i;

/**
 * The 32 bytes of a base58 key, or undefined when the text is not one. The bytes of recent keys
 * are remembered (see keyTexts below for why a memo per thread is safe), so they are shared:
 * read them, never write to them. The embedded chain reads each account LiteSVM holds by its
 * bytes, and a swap's accounts are read a dozen times a run; a route names the same programs and
 * mints in every instruction.
 */
export function base58AddressBytes(text: string): Uint8Array | undefined {
  const known = keyBytes.get(text);
  if (known !== undefined) return known;
  // Bounded before decoding: 32 bytes take 32 to 44 digits.
  if (text.length < 32 || text.length > 44) return undefined;
  const bytes = base58Bytes(text);
  if (bytes?.length !== 32) return undefined;
  if (keyBytes.size >= KEY_TEXTS) keyBytes.clear();
  keyBytes.set(text, bytes);
  return bytes;
}

/** The bytes of recent keys by their text: only keys, so a flood of bad texts remembers nothing. */
const keyBytes = new Map<string, Uint8Array>();

/** The 32 bytes of a base58 key (shared: read only); throws a TypeError naming it when the text is not one. */
export function addressBytes(text: string): Uint8Array {
  const bytes = base58AddressBytes(text);
  if (bytes === undefined) throw new TypeError(`not a base58 address: ${text.slice(0, 64)}`);
  return bytes;
}

/**
 * Any base58 text as bytes, as kit's base58 encoder reads it (a zero byte per leading "1"), or
 * undefined when a character is not base58: signatures and hashes in JSON-RPC params. Five digits
 * are taken at a time into limbs of 16 bits (a limb × 58^5 plus its carry stays below 2^46, exact
 * in a double): a key's 44 digits cost 9 passes over at most 16 limbs, not 44 passes over up to 32
 * bytes, and every route and request names dozens of keys. Bound the text's length first: the
 * work is quadratic in it.
 */
export function base58Bytes(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 49 /* "1" */) zeros++;
  // log(58) / log(256) < 0.733: each digit makes at most 0.733 bytes, half that in limbs.
  const limbs = new Float64Array(Math.ceil(((text.length - zeros) * 733) / 2000) + 1);
  let length = 0;
  let i = zeros;
  while (i < text.length) {
    let chunk = 0;
    let scale = 1;
    for (const end = Math.min(text.length, i + 5); i < end; i++) {
      const code = text.charCodeAt(i);
      const digit = code < 128 ? (DIGIT[code] as number) : -1;
      if (digit < 0) return undefined;
      chunk = chunk * 58 + digit;
      scale *= 58;
    }
    let carry = chunk;
    for (let j = 0; j < length; j++) {
      const x = (limbs[j] as number) * scale + carry;
      carry = Math.floor(x / 65536);
      limbs[j] = x - carry * 65536;
    }
    while (carry > 0) {
      const next = Math.floor(carry / 65536);
      limbs[length++] = carry - next * 65536;
      carry = next;
    }
  }
  // The top limb is not 0; it takes one byte when below 256.
  const top = length === 0 ? 0 : (limbs[length - 1] as number);
  const out = new Uint8Array(zeros + 2 * length - (length > 0 && top < 256 ? 1 : 0));
  let at = out.length;
  for (let j = 0; j < length; j++) {
    const limb = limbs[j] as number;
    out[--at] = limb & 0xff;
    if (at > zeros) out[--at] = limb >>> 8;
  }
  return out;
}

/**
 * Whether `text` is a 32-byte key in base58: kit's isAddress, without its BigInt. Every address a
 * request, a route or the embedded chain's params name is checked so.
 */
export function isBase58Address(text: string): boolean {
  return base58AddressBytes(text) !== undefined;
}

/** `text` as kit's Address type once checked (kit's `address()`, without its BigInt); throws if it is none. */
export function checkedAddress(text: string): Address {
  if (!isBase58Address(text)) throw new TypeError(`not a base58 address: ${text.slice(0, 64)}`);
  return text as Address;
}

/** Keys whose text is remembered, at most (then all are forgotten, and remembered anew). */
const KEY_TEXTS = 8192;
/**
 * The texts of recent keys, by a hash of their bytes. A memo of a pure function, so one per thread
 * is safe to share: no caller can tell it is there, but by speed. A transaction's keys are named
 * again by each step that reads them (its decoding, every token account and owner read before and
 * after it runs, its meta), so the embedded chain's thread encoded the same few keys hundreds of
 * times per swap, most of its allocation.
 */
const keyTexts = new Map<number, { readonly bytes: Uint8Array; readonly text: string }>();

/** A 32-byte key as base58 text. */
export function base58Address(bytes: Uint8Array): string {
  if (bytes.length !== 32) return base58Text(bytes);
  // Two words of the key, mixed; a collision only makes a miss (the bytes are compared).
  const hash =
    (((bytes[0] as number) | ((bytes[1] as number) << 8) | ((bytes[2] as number) << 16)) ^
      Math.imul(
        (bytes[16] as number) | ((bytes[17] as number) << 8) | ((bytes[18] as number) << 16),
        0x9e3779b1,
      ) ^
      (bytes[31] as number)) &
    0x3fffffff;
  const known = keyTexts.get(hash);
  if (known !== undefined && sameBytes(known.bytes, bytes)) return known.text;
  const text = base58Text(bytes);
  if (keyTexts.size >= KEY_TEXTS) keyTexts.clear();
  // A copy: the caller's bytes may be a view of a buffer written again later.
  keyTexts.set(hash, { bytes: bytes.slice(), text });
  return text;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Any bytes as base58 text, as kit's base58 decoder writes them ("" for none, a "1" per leading
 * zero byte): signatures, and instruction data in JSON-RPC's "json" encoding. The value is kept
 * in limbs of five base-58 digits (58^5 × 256 stays below 2^53, exact in a double), so each byte
 * costs a fifth of the divisions a digit at a time would. The digits are written into one byte
 * array and made a string once: prepending them one by one made a string per digit, which was
 * most of what the embedded chain's thread allocated in the swap bench.
 */
export function base58Text(bytes: ArrayLike<number>): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // log(256) / log(58) < 1.366: each byte makes at most 1.37 digits, a fifth of that in limbs.
  const limbs = new Float64Array(Math.ceil(((bytes.length - zeros) * 137) / 500) + 1);
  let length = 0;
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number;
    for (let j = 0; j < length; j++) {
      const x = (limbs[j] as number) * 256 + carry;
      carry = Math.floor(x / LIMB);
      limbs[j] = x - carry * LIMB;
    }
    while (carry > 0) {
      const next = Math.floor(carry / LIMB);
      limbs[length++] = carry - next * LIMB;
      carry = next;
    }
  }
  const text = new Uint8Array(zeros + 5 * length);
  let at = text.length;
  for (let j = 0; j < length; j++) {
    let limb = limbs[j] as number;
    // The top limb's leading zero digits are not written.
    for (let k = 0; k < 5 && (j < length - 1 || limb > 0); k++) {
      const q = Math.floor(limb / 58);
      text[--at] = ALPHABET_CODES[limb - q * 58] as number;
      limb = q;
    }
  }
  text.fill(49 /* "1" */, at - zeros, at);
  return latin1(text.subarray(at - zeros));
}

const ALPHABET_CODES = Uint8Array.from(ALPHABET, (c) => c.charCodeAt(0));
/** ASCII bytes as a string, in chunks small enough to pass as arguments. */
function latin1(codes: Uint8Array): string {
  if (codes.length <= 4096) return String.fromCharCode.apply(null, codes as unknown as number[]);
  let out = "";
  for (let i = 0; i < codes.length; i += 4096)
    out += String.fromCharCode.apply(null, codes.subarray(i, i + 4096) as unknown as number[]);
  return out;
}

const LIMB = 58 ** 5;
