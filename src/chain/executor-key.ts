import { randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { ConfigError } from "../config.ts";
import { type SigningKey, signingKeyFromSeed } from "./ed25519-key.ts";

/**
 * The executor's key could not be used; the message names EXECUTOR_KEYPAIR and never its content.
 * A configuration error: the process exits 2 with it, as for a bad variable.
 */
export class ExecutorKeyError extends ConfigError {
  constructor(problem: string) {
    super(`invalid configuration: ${problem}`);
  }
}

/**
 * The executor's key from a Solana CLI keypair file (`solana-keygen new -o key.json`): a JSON
 * array of 64 bytes, the Ed25519 seed then the public key. The file must be readable by its owner
 * alone (mode 600 or stricter), as ssh insists for its keys: a key others can read is no longer the
 * service's alone. What is wrong is said without quoting the file, which holds the secret.
 */
export async function loadExecutorKey(path: string): Promise<SigningKey> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch {
    throw new ExecutorKeyError(`EXECUTOR_KEYPAIR names a file that cannot be read (${path})`);
  }
  if ((mode & 0o077) !== 0) {
    throw new ExecutorKeyError(
      `EXECUTOR_KEYPAIR names a file readable by group or others (mode ${(mode & 0o777).toString(8)}): run chmod 600 on it`,
    );
  }
  let bytes: unknown;
  try {
    bytes = JSON.parse(await readFile(path, "utf8"));
  } catch {
    throw new ExecutorKeyError("EXECUTOR_KEYPAIR is not a Solana keypair file (a JSON array of 64 bytes)");
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
