import { createHash } from "node:crypto";
import { addressBytes, base58Address } from "./base58-address.ts";

/**
 * Program-derived addresses, synchronously. Kit's findProgramAddress hashes through WebCrypto (a
 * promise and a thread-pool job per bump tried) and reads every address through its BigInt base58
 * codec; a swap derives its new taker's associated account at every run, which the profile showed
 * among the largest costs of the swap path. The same derivation with node:crypto's SHA-256 and
 * the same on-curve test (test/program-address.test.ts holds it to kit's over random keys).
 */

const PDA_MARKER = Buffer.from("ProgramDerivedAddress");
/** The associated token account program. */
const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

/** `[address, bump]` for `seeds` under `program`, as Solana's find_program_address gives it. */
export function findProgramAddress(seeds: readonly Uint8Array[], program: Uint8Array): [string, number] {
  for (let bump = 255; bump >= 0; bump--) {
    const hash = createHash("sha256");
    for (const seed of seeds) hash.update(seed);
    hash.update(Uint8Array.of(bump)).update(program).update(PDA_MARKER);
    const candidate = hash.digest();
    if (!isOnCurve(candidate)) return [base58Address(candidate), bump];
  }
  throw new Error("no program-derived address for these seeds");
}

/** The associated token account of `owner` for `mint` under `tokenProgram` (all base58 keys). */
export function associatedTokenAddress(owner: string, mint: string, tokenProgram: string): string {
  return findProgramAddress(
    [addressBytes(owner), addressBytes(tokenProgram), addressBytes(mint)],
    addressBytes(ASSOCIATED_TOKEN_PROGRAM),
  )[0];
}

// Ed25519 point decompression (RFC 8032 §5.1.3) decides only whether a square root exists.
const P = 2n ** 255n - 19n;
const D = 37095705934669439343138083508754565189542113879843219016388785533085940283555n;

/**
 * Whether 32 bytes are a valid compressed Ed25519 point (a PDA must not be one), as kit's
 * compressedPointBytesAreOnCurve decides it. The point exists when x² = u / v has a root, u = y² - 1
 * and v = d·y² + 1: when u·v (u / v times the square v²) is a square mod P, which its Jacobi symbol
 * says. Kit finds the root itself (an exponent of 2^252 - 3: 250 squarings of BigInts, each a new
 * BigInt); the symbol is worked out in place on 32-bit limbs, and a swap derives its new taker's
 * account at every run. With u = 0, x is 0, which a set sign bit cannot name. v is never 0 (d is
 * not a square).
 */
export function isOnCurve(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  // y is little-endian, its top bit the sign of x: read as one hex number, not a BigInt per byte.
  const bigEndian = Buffer.from(bytes).reverse();
  bigEndian[0] = (bigEndian[0] as number) & 0x7f;
  const y = BigInt(`0x${bigEndian.toString("hex")}`);
  const y2 = (y * y) % P;
  const u = (y2 + P - 1n) % P;
  if (u === 0n) return ((bytes[31] as number) & 0x80) === 0;
  const v = (D * y2 + 1n) % P;
  return jacobi(limbsOf((u * v) % P), P_LIMBS.slice()) === 1;
}

/** P as limbs: copied for each use, as jacobi overwrites what it is given. */
const P_LIMBS = limbsOf(P);

/** A value below 2^256 as eight 32-bit limbs, least significant first. */
function limbsOf(value: bigint): Uint32Array {
  const limbs = new Uint32Array(8);
  for (let i = 0; i < 8; i++) {
    limbs[i] = Number(value & 0xffffffffn);
    value >>= 32n;
  }
  return limbs;
}

/**
 * The Jacobi symbol (a / n), n odd: 1, -1, or 0 when they share a factor. The binary algorithm,
 * on limbs it overwrites: take out the twos of a (each flips the sign when n is 3 or 5 mod 8),
 * keep a the larger by swapping (reciprocity flips it when both are 3 mod 4), subtract n.
 */
function jacobi(a: Uint32Array, n: Uint32Array): number {
  let t = 1;
  for (;;) {
    let low = 0;
    while (low < 8 && a[low] === 0) low++;
    if (low === 8) return isOne(n) ? t : 0;
    const word = a[low] as number;
    const twos = 32 * low + 31 - Math.clz32(word & -word);
    if (twos > 0) {
      const r = (n[0] as number) & 7;
      if ((twos & 1) === 1 && (r === 3 || r === 5)) t = -t;
      shiftRight(a, twos);
    }
    if (less(a, n)) {
      // Swapped through a local: a destructuring swap made an array each time (most of what
      // the swap path's on-curve tests allocated).
      const larger = n;
      n = a;
      a = larger;
      if (((a[0] as number) & 3) === 3 && ((n[0] as number) & 3) === 3) t = -t;
    }
    // Both odd: what is left is even, or zero.
    let borrow = 0;
    for (let i = 0; i < 8; i++) {
      const difference = (a[i] as number) - (n[i] as number) - borrow;
      borrow = difference < 0 ? 1 : 0;
      a[i] = difference;
    }
  }
}

function shiftRight(limbs: Uint32Array, by: number): void {
  const words = by >>> 5;
  const bits = by & 31;
  for (let i = 0; i < 8; i++) {
    const low = limbs[i + words] ?? 0;
    const high = limbs[i + words + 1] ?? 0;
    limbs[i] = bits === 0 ? low : (low >>> bits) | (high << (32 - bits));
  }
}

function less(a: Uint32Array, b: Uint32Array): boolean {
  for (let i = 7; i >= 0; i--) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  return false;
}

function isOne(limbs: Uint32Array): boolean {
  return limbs[0] === 1 && limbs.every((limb, i) => i === 0 || limb === 0);
}
