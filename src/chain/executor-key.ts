import { randomBytes } from "node:crypto";
import { type SigningKey, signingKeyFromSeed } from "./ed25519-key.ts";
import { readSecretFile, SecretFileError } from "./secret-file.ts";

/** The executor's key could not be used; the message names EXECUTOR_KEYPAIR and never its content. */
export class ExecutorKeyError extends SecretFileError {}

/**
 * The executor's key from a Solana CLI keypair file (`solana-keygen new -o key.json`): a JSON
 * array of 64 bytes, the Ed25519 seed then the public key, readable by its owner alone.
 */
export async function loadExecutorKey(path: string): Promise<SigningKey> {
  const text = await readSecretFile(path, "EXECUTOR_KEYPAIR").catch((error: SecretFileError) => {
    throw new ExecutorKeyError(error.message.replace(/^invalid configuration: /, ""));
  });
  let bytes: unknown;
  try {
    bytes = JSON.parse(text.toString("utf8"));
  } catch {
    throw new ExecutorKeyError("EXECUTOR_KEYPAIR is not a Solana keypair file (a JSON array of 64 bytes)");
  } finally {
    text.fill(0);
  }
  if (
    !Array.isArray(bytes) ||
    bytes.length !== 64 ||
    !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)
  ) {
    throw new ExecutorKeyError("EXECUTOR_KEYPAIR is not a Solana keypair file (a JSON array of 64 bytes)");
  }
  const keypair = Uint8Array.from(bytes as number[]);
  const key = signingKeyFromSeed(keypair.subarray(0, 32));
  if (!Buffer.from(key.publicKey).equals(Buffer.from(keypair.subarray(32)))) {
    throw new ExecutorKeyError("EXECUTOR_KEYPAIR holds a public key that does not match its secret key");
  }
  keypair.fill(0);
  return key;
}

/** A fresh key, for the embedded local chain when no EXECUTOR_KEYPAIR is given. */
export function generateExecutorKey(): SigningKey {
  const seed = randomBytes(32);
  const key = signingKeyFromSeed(seed);
  seed.fill(0);
  return key;
}
