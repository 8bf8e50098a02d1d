/**
 * The synchronous program-derived addresses and base58 (src/chain/program-address.ts,
 * base58-address.ts) against kit's own, over random keys: the service derives its takers'
 * associated accounts with them, so a difference would send tokens to an account nobody owns.
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import {
  type Address,
  getAddressDecoder,
  getAddressEncoder,
  getProgramDerivedAddress,
  isAddress,
  isOffCurveAddress,
} from "@solana/kit";
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { describe, expect, it } from "vitest";
import { base58Address, base58AddressBytes, isBase58Address } from "../src/chain/base58-address.ts";
import { associatedTokenAddress, findProgramAddress, isOnCurve } from "../src/chain/program-address.ts";
import { TOKEN_2022_PROGRAM_ADDRESS } from "../src/chain/token-programs.ts";

const decoder = getAddressDecoder();
const encoder = getAddressEncoder();
/** Random keys, with some leading zero bytes (their base58 starts with "1"s). */
const randomKey = (i: number) => {
  const bytes = randomBytes(32);
  bytes.fill(0, 0, i % 5 === 0 ? i % 3 : 0);
  return new Uint8Array(bytes);
};

describe("base58 addresses without BigInt", () => {
  it("encode and decode as kit's codec does, leading zeros included", () => {
    for (let i = 0; i < 2_000; i++) {
      const bytes = randomKey(i);
      const text = decoder.decode(bytes);
      expect(base58Address(bytes)).toBe(text);
      expect(base58AddressBytes(text)).toEqual(bytes);
      // Asked again (the remembered bytes): the same answer.
      expect(base58AddressBytes(text)).toEqual(bytes);
    }
    // Past the memo's bound (8,192 keys) it starts anew, and still answers each key rightly.
    const many = Array.from({ length: 9_000 }, (_, i) => randomKey(i));
    for (const bytes of many) expect(base58AddressBytes(decoder.decode(bytes))).toEqual(bytes);
    for (const bytes of many.slice(0, 50)) expect(base58AddressBytes(decoder.decode(bytes))).toEqual(bytes);
    expect(base58Address(new Uint8Array(32))).toBe("11111111111111111111111111111111");
    expect(base58Address(new Uint8Array(32).fill(255))).toBe(decoder.decode(new Uint8Array(32).fill(255)));
  });

  it("name each key by its own bytes when it is named again: the same, changed in place, or sharing the hashed bytes", () => {
    const bytes = randomKey(1);
    const first = base58Address(bytes);
    expect(base58Address(bytes)).toBe(first);
    // The same buffer written again (a view of a reused buffer): its new key, not the one remembered.
    bytes[9] = (bytes[9] as number) ^ 1;
    expect(base58Address(bytes)).toBe(decoder.decode(bytes));
    // Keys alike in every byte the memo hashes, and different elsewhere, each get their own.
    for (let i = 0; i < 200; i++) {
      const other = new Uint8Array(bytes);
      other[5] = i;
      other[20] = 255 - i;
      expect(base58Address(other)).toBe(decoder.decode(other));
      expect(base58Address(bytes)).toBe(decoder.decode(bytes));
    }
  });

  it("refuse what is not a 32-byte key", () => {
    for (const text of [
      "",
      "1111111111111111111111111111111", // 31 zero bytes
      "111111111111111111111111111111111", // 33
      "0OIl1111111111111111111111111111", // not in the alphabet
      `${decoder.decode(new Uint8Array(32).fill(255))}1`, // more than 32 bytes
      "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCNé",
    ]) {
      expect(base58AddressBytes(text), text).toBeUndefined();
    }
  });

  it("tell addresses from other text exactly as kit's isAddress does", () => {
    const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0OIl";
    for (let i = 0; i < 5_000; i++) {
      // Lengths around a key's (32 to 44 characters), the alphabet's digits and some that are not.
      const length = 28 + (i % 20);
      let text = i % 7 === 0 ? "1".repeat(i % 5) : "";
      while (text.length < length) text += alphabet[Math.floor(Math.random() * (i % 3 === 0 ? 62 : 58))];
      expect(isBase58Address(text), text).toBe(isAddress(text));
    }
    for (let i = 0; i < 500; i++) expect(isBase58Address(decoder.decode(randomKey(i)))).toBe(true);
  });
});

describe("program-derived addresses without WebCrypto", () => {
  it("find each associated token account kit finds", async () => {
    for (let i = 0; i < 300; i++) {
      const owner = decoder.decode(randomKey(i));
      const mint = decoder.decode(randomKey(i + 1));
      const program = i % 2 === 0 ? TOKEN_PROGRAM_ADDRESS : TOKEN_2022_PROGRAM_ADDRESS;
      const [expected] = await findAssociatedTokenPda({
        owner: owner as Address,
        mint: mint as Address,
        tokenProgram: program,
      });
      expect(associatedTokenAddress(owner, mint, program), `${owner} ${mint}`).toBe(expected);
    }
  });

  it("give kit's bump, past the ones on the curve", async () => {
    let skipped = 0;
    for (let i = 0; i < 200; i++) {
      const seed = randomKey(i);
      const program = decoder.decode(randomKey(i + 7)) as Address;
      const [address, bump] = await getProgramDerivedAddress({ programAddress: program, seeds: [seed] });
      expect(findProgramAddress([seed], encoder.encode(program) as Uint8Array)).toEqual([address, bump]);
      if (bump < 255) skipped++;
    }
    // About half of the first bumps are on the curve: the on-curve test was exercised both ways.
    expect(skipped).toBeGreaterThan(50);
  });

  it("tell points on the curve from points off it", () => {
    // Public keys are on the curve; a program-derived address is not.
    for (let i = 0; i < 50; i++) {
      const jwk = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
      expect(isOnCurve(new Uint8Array(Buffer.from(jwk.x as string, "base64url")))).toBe(true);
    }
    const ata = base58AddressBytes(
      associatedTokenAddress(
        "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
        "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
        TOKEN_PROGRAM_ADDRESS,
      ),
    ) as Uint8Array;
    expect(isOnCurve(ata)).toBe(false);
    expect(isOnCurve(new Uint8Array(31))).toBe(false);
  });

  it("decide every point as kit's on-curve test does, edges included", () => {
    /** y as 32 little-endian bytes, the sign bit set or not. */
    const point = (y: bigint, sign: boolean) => {
      const bytes = new Uint8Array(32);
      for (let i = 0; i < 32; i++) bytes[i] = Number((y >> BigInt(8 * i)) & 0xffn);
      if (sign) bytes[31] = (bytes[31] as number) | 0x80;
      return bytes;
    };
    const P = 2n ** 255n - 19n;
    const keys: Uint8Array[] = [];
    // y = ±1 (x = 0, so the sign bit decides), 0, and y past P (read mod P, as kit reads it).
    for (const y of [0n, 1n, P - 1n, P, P + 1n, P + 18n, 2n ** 255n - 1n])
      for (const sign of [false, true]) keys.push(point(y, sign));
    for (let i = 0; i < 1000; i++) {
      keys.push(randomKey(i));
      const jwk = generateKeyPairSync("ed25519").publicKey.export({ format: "jwk" });
      keys.push(new Uint8Array(Buffer.from(jwk.x as string, "base64url")));
    }
    let on = 0;
    for (const key of keys) {
      const expected = !isOffCurveAddress(decoder.decode(key));
      expect(isOnCurve(key), base58Address(key)).toBe(expected);
      if (expected) on++;
    }
    // Both answers were exercised, many times each.
    expect(on).toBeGreaterThan(1000);
    expect(keys.length - on).toBeGreaterThan(300);
  });
});
