/**
 * Kit's order of addresses (getAddressComparator: an `Intl.Collator("en")`, sensitivity "variant",
 * caseFirst "lower", not numeric), for base58 text, without the collator. Kit builds a new
 * collator for every message it compiles, and each comparison goes through ICU; this is a loop
 * over char codes.
 *
 * Base58 is ASCII digits and letters, and for those the collation is: letters compared without
 * their case, digits before letters, a text before any longer text it begins (all at the first
 * level); only between texts equal but for case does case count, at the first letter whose case
 * differs, lowercase first ("a" < "A" < "b"). That is not code-point order ("B" < "a" there).
 * test/compiled-message.test.ts holds this to kit's comparator: every pair of texts of up to two
 * base58 characters, and random keys with their case flipped. Only for base58 text: other
 * characters (punctuation, accents) the collator weighs otherwise.
 */
export function compareAddresses(a: string, b: string): number {
  const length = a.length < b.length ? a.length : b.length;
  let caseOrder = 0;
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Setting 0x20 lowers an ASCII letter's case and leaves the digits 1-9 (0x31-0x39) as they are.
    const foldedX = x | 0x20;
    const foldedY = y | 0x20;
    if (foldedX !== foldedY) return foldedX < foldedY ? -1 : 1;
    // The same letter in two cases: lowercase (the higher code) first, if nothing else differs.
    if (caseOrder === 0) caseOrder = x > y ? -1 : 1;
  }
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return caseOrder;
}

/** Base58 digits by char code: whether each ASCII code is one. */
const BASE58 = new Uint8Array(128);
for (const digit of "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")
  BASE58[digit.charCodeAt(0)] = 1;

/**
 * Whether `text` reads as a 32-byte key: 32 to 44 base58 digits (not whether it decodes to 32 bytes,
 * which costs a decode). compareAddresses holds kit's order for such text, and no such name is
 * one of an object's own or inherited keys (kit keys plain objects by address).
 */
export function isAddressText(text: unknown): text is string {
  if (typeof text !== "string" || text.length < 32 || text.length > 44) return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 128 || BASE58[code] === 0) return false;
  }
  return true;
}
