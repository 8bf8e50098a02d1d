/** An executor key file as `solana-keygen new -o executor.json` writes it, for processes on a cluster. */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { chmodSync, writeFileSync } from "node:fs";
import { type Address, getAddressDecoder } from "@solana/kit";

/** Writes a fresh keypair to `path` (a JSON array of 64 bytes, mode 600) and gives its address. */
export function writeExecutorKeypair(path: string): Address {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const seed = privateKey.export({ format: "der", type: "pkcs8" }).subarray(-32);
  const pub = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
  writeFileSync(path, JSON.stringify([...seed, ...pub]), { mode: 0o600 });
  chmodSync(path, 0o600);
  return getAddressDecoder().decode(pub);
}

/** Writes a delegate master secret as DELEGATE_SEED takes it (32 random bytes, mode 600). */
export function writeDelegateSeed(path: string): Uint8Array {
  const secret = randomBytes(32);
  writeFileSync(path, secret, { mode: 0o600 });
  chmodSync(path, 0o600);
  return new Uint8Array(secret);
}
