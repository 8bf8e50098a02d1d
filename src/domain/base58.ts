/**
 * Base58 (Bitcoin alphabet), as Solana uses for addresses and signatures. Decoding is needed to
 * check that an address really is 32 bytes, which its string length alone does not tell.
 */
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const INDEX = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) INDEX[ALPHABET.charCodeAt(i)] = i;

/** Encodes bytes as base58; leading zero bytes become leading "1"s. */
export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const digits: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] as number;
    for (let j = 0; j < digits.length; j++) {
      carry += (digits[j] as number) << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = (carry / 58) | 0;
    }
  }
  let out = "1".repeat(zeros);
  for (let i = digits.length - 1; i >= 0; i--) out += ALPHABET[digits[i] as number];
  return out;
}

/** Decodes base58, or returns undefined when the text holds a character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | undefined {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === "1") zeros++;
  const bytes: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? (INDEX[code] as number) : -1;
    if (value < 0) return undefined;
    let carry = value;
    for (let j = 0; j < bytes.length; j++) {
      carry += (bytes[j] as number) * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  for (let i = 0; i < bytes.length; i++) out[zeros + i] = bytes[bytes.length - 1 - i] as number;
  return out;
}

/** True when `text` is base58 for exactly `size` bytes (32 for an address, 64 for a signature). */
export function isBase58OfSize(text: string, size: number): boolean {
  // A cheap length bound first: base58 of n bytes has at most ceil(n * log(256) / log(58)) characters.
  if (text.length === 0 || text.length > Math.ceil((size * 8) / Math.log2(58))) return false;
  return base58Decode(text)?.length === size;
}

/** The address rule, as validation messages state it. */
export const ADDRESS_RULE = "must be a base58-encoded 32-byte Solana address";

/** True when `text` is a Solana address: base58 of 32 bytes. */
export function isAddress(text: string): boolean {
  return isBase58OfSize(text, 32);
}
