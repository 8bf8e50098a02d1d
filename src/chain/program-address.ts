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

// Ed25519 point decompression (RFC 8032 §5.1.3), as kit's compressedPointBytesAreOnCurve does it.
const P = 2n ** 255n - 19n;
const D = 37095705934669439343138083508754565189542113879843219016388785533085940283555n;
/** √-1 mod P. */
const RM1 = 19681161376707505956807079304988542015446066515923890162744021073123829784752n;
const mod = (a: bigint) => {
  const r = a % P;
  return r >= 0n ? r : P + r;
};
/** 2^255 - 1: P is 2^255 - 19, so a value's bits past 255 count 19 times their weight below. */
const LOW_255 = (1n << 255n) - 1n;
/**
 * x^(2^power) mod P. Each square is folded twice (high part × 19 onto the low part) instead of
 * divided by P: a quarter faster, and this is where the on-curve test spends its time.
 */
function pow2(x: bigint, power: number): bigint {
  let r = x;
  for (let i = 0; i < power; i++) {
    r *= r;
    r = (r & LOW_255) + 19n * (r >> 255n);
    r = (r & LOW_255) + 19n * (r >> 255n);
  }
  return r % P;
}
/** x^(2^252 - 3) mod P. */
function pow_2_252_3(x: bigint): bigint {
  const x2 = (x * x) % P;
  const b2 = (x2 * x) % P;
  const b4 = (pow2(b2, 2) * b2) % P;
  const b5 = (pow2(b4, 1) * x) % P;
  const b10 = (pow2(b5, 5) * b5) % P;
  const b20 = (pow2(b10, 10) * b10) % P;
  const b40 = (pow2(b20, 20) * b20) % P;
  const b80 = (pow2(b40, 40) * b40) % P;
  const b160 = (pow2(b80, 80) * b80) % P;
  const b240 = (pow2(b160, 80) * b80) % P;
  const b250 = (pow2(b240, 10) * b10) % P;
  return (pow2(b250, 2) * x) % P;
}

/** Whether 32 bytes are a valid compressed Ed25519 point (a PDA must not be one). */
export function isOnCurve(bytes: Uint8Array): boolean {
  if (bytes.length !== 32) return false;
  let y = 0n;
  for (let i = 31; i >= 0; i--)
    y = (y << 8n) | BigInt(i === 31 ? (bytes[i] as number) & 0x7f : (bytes[i] as number));
  const y2 = mod(y * y);
  const u = mod(y2 - 1n);
  const v = mod(D * y2 + 1n);
  const v3 = mod(v * v * v);
  const v7 = mod(v3 * v3 * v);
  let x = mod(u * v3 * pow_2_252_3(u * v7));
  const vx2 = mod(v * x * x);
  const root1 = vx2 === u;
  const root2 = vx2 === mod(-u);
  if (!root1 && !root2) return false;
  if (!root1) x = mod(x * RM1);
  return !(x === 0n && ((bytes[31] as number) & 0x80) !== 0);
}
