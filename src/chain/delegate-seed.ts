import { randomBytes } from "node:crypto";
import { readSecretFile, SecretFileError } from "./secret-file.ts";

/**
 * The delegates' master secret from DELEGATE_SEED's file: 32 random bytes, raw
 * (`head -c 32 /dev/urandom > delegate.seed`) or as 64 hex digits, readable by its owner alone.
 * Losing it loses every delegate (owners must approve again); leaking it lets the holder sign as
 * every delegate, so it is kept like the executor's key.
 */
export async function loadDelegateSeed(path: string): Promise<Uint8Array> {
  const bytes = await readSecretFile(path, "DELEGATE_SEED");
  try {
    if (bytes.length === 32) return Uint8Array.from(bytes);
    const text = bytes.toString("latin1").trim();
    if (/^[0-9a-fA-F]{64}$/.test(text)) return Uint8Array.from(Buffer.from(text, "hex"));
  } finally {
    bytes.fill(0);
  }
  throw new SecretFileError(
    "DELEGATE_SEED is not a delegate seed file (32 random bytes, or 64 hex digits): make one with head -c 32 /dev/urandom > delegate.seed; chmod 600 delegate.seed",
  );
}

/** A fresh master secret, for the embedded local chain when no DELEGATE_SEED is given. */
export function generateDelegateSeed(): Uint8Array {
  return new Uint8Array(randomBytes(32));
}
