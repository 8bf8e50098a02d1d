import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { BlockClockState } from "./block-clock.ts";
import type { NewLedgerEntry } from "./ledger.ts";

/** An account as the state file keeps it. */
export interface SavedAccount {
  readonly lamports: string;
  readonly owner: string;
  readonly executable: boolean;
  /** base64 */
  readonly data: string;
}

/**
 * Everything the local chain is: every account that differs from a fresh LiteSVM's (what
 * transactions wrote and cheatcodes set; the programs and sysvars LiteSVM brings are not saved),
 * its clock and its ledger. Plain data, so any LiteSVM version can load it.
 */
export interface ChainState {
  readonly accounts: readonly (readonly [address: string, account: SavedAccount])[];
  readonly clock: BlockClockState;
  readonly ledger: readonly NewLedgerEntry[];
}

const MAGIC = Buffer.from("TASLC2\n");

/**
 * One file holds a chain: a magic line, then its accounts, clock and ledger as one deflated JSON
 * document (a tenth of its size: logs and balances repeat).
 */
export function encodeChainState(state: ChainState): Buffer {
  return Buffer.concat([MAGIC, deflateRawSync(JSON.stringify(state), { level: 1 })]);
}

export function decodeChainState(bytes: Uint8Array): ChainState {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!buffer.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error("not a local chain state file");
  return JSON.parse(inflateRawSync(buffer.subarray(MAGIC.length)).toString("utf8")) as ChainState;
}

export async function readChainState(path: string): Promise<ChainState | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return decodeChainState(bytes);
}

/**
 * Writes the state so that a crash at any moment leaves either the old file or the new one: to a
 * temporary file beside it, flushed, then renamed over it.
 */
export async function writeChainState(path: string, state: ChainState, mode = 0o600): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  const file = await open(temporary, "w", mode);
  try {
    await file.writeFile(encodeChainState(state));
    await file.sync();
  } catch (error) {
    await file.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await file.close();
  await rename(temporary, path);
}
