import { readFile, stat } from "node:fs/promises";
import { ConfigError } from "../config.ts";

/**
 * A secret file could not be used; the message names its variable and never its content.
 * A configuration error: the process exits 2 with it, as for a bad variable.
 */
export class SecretFileError extends ConfigError {
  constructor(problem: string) {
    super(`invalid configuration: ${problem}`);
  }
}

/**
 * The bytes of a secret file named by `variable`, which must be readable by its owner alone (mode
 * 600 or stricter), as ssh insists for its keys: a secret others can read is no longer the
 * service's alone. What is wrong is said without quoting the file.
 */
export async function readSecretFile(path: string, variable: string): Promise<Buffer> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch {
    throw new SecretFileError(`${variable} names a file that cannot be read (${path})`);
  }
  if ((mode & 0o077) !== 0) {
    throw new SecretFileError(
      `${variable} names a file readable by group or others (mode ${(mode & 0o777).toString(8)}): run chmod 600 on it`,
    );
  }
  try {
    return await readFile(path);
  } catch {
    throw new SecretFileError(`${variable} names a file that cannot be read (${path})`);
  }
}
