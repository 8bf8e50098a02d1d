import { createHash } from "node:crypto";
import { base58Address, base58AddressBytes } from "./base58-address.ts";

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
    [keyBytes(owner), keyBytes(tokenProgram), keyBytes(mint)],
    keyBytes(ASSOCIATED_TOKEN_PROGRAM),
  )[0];
}

function keyBytes(key: string): Uint8Array {
  const bytes = base58AddressBytes(key);
  if (bytes === undefined) throw new TypeError(`not a base58 address: ${key}`);
  return bytes;
}

// Ed25519 point decompression (RFC 8032 §5.1.3) decides only whether a square root exists.
const P = 2n ** 255n - 19n;
const D = 37095705934669439343138083508754565189542113879843219016388785533085940283555n;
/** Past this, the Jacobi symbol's loop goes on in doubles: no BigInt to allocate per step. */
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Whether 32 bytes are a valid compressed Ed25519 point (a PDA must not be one), as kit's
 * compressedPointBytesAreOnCurve decides it. The point exists when x² = u / v has a root, u = y² - 1
 * and v = d·y² + 1: when u·v (u / v times the square v²) is a square mod P, which its Jacobi symbol
 * says. Kit finds the root itself (an exponent of 2^252 - 3: 250 squarings of BigInts); the
 * symbol costs a third of that, and a swap derives its new taker's account at every run. With
 * u = 0, x is 0, which a set sign bit cannot name. v is never 0 (d is not a square).
 */
export function isOnCurve(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  let y = 0n;
  for (let i = 31; i >= 0; i--)
    y = (y << 8n) | BigInt(i === 31 ? (bytes[i] as number) & 0x7f : (bytes[i] as number));
  const y2 = (y * y) % P;
  const u = (y2 + P - 1n) % P;
  if (u === 0n) return ((bytes[31] as number) & 0x80) === 0;
  const v = (D * y2 + 1n) % P;
  return jacobi((u * v) % P, P) === 1;
}

/** The Jacobi symbol (a / n) of 0 ≤ a < n, n odd: 1, -1, or 0 when they share a factor. */
function jacobi(a: bigint, n: bigint): number {
  let t = 1;
  while (a !== 0n) {
    if (n <= SAFE) return t * smallJacobi(Number(a), Number(n));
    while ((a & 1n) === 0n) {
      a >>= 1n;
      const r = n & 7n;
      if (r === 3n || r === 5n) t = -t;
    }
    [a, n] = [n, a];
    if ((a & 3n) === 3n && (n & 3n) === 3n) t = -t;
    a %= n;
  }
  return n === 1n ? t : 0;
}

function smallJacobi(a: number, n: number): number {
  let t = 1;
  while (a !== 0) {
    while (a % 2 === 0) {
      a /= 2;
      const r = n % 8;
      if (r === 3 || r === 5) t = -t;
    }
    [a, n] = [n, a];
    if (a % 4 === 3 && n % 4 === 3) t = -t;
    a %= n;
  }
  return n === 1 ? t : 0;
}
