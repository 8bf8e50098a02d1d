import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createDeflateRaw, createInflateRaw, inflateRawSync } from "node:zlib";
import type { BlockClockState } from "./block-clock.ts";
import type { NewLedgerEntry } from "./ledger.ts";

/** An account as the state file keeps it. */
export interface SavedAccount {
  readonly lamports: string;
  readonly owner: string;
  readonly executable: boolean;
  /** base64 */
  readonly data: string;
  /** Set by surfnet_setAccount to other than u64::MAX (decimal); absent for every other account. */
  readonly rentEpoch?: string;
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
  /**
   * The seed of the chain's own keys (chain-keys.ts: its pools' and its mints' authority), 64 hex
   * digits. Absent in the genesis, which is public, and in state files saved before chains had
   * keys of their own: such a chain gets a new seed when it starts.
   */
  readonly keySeed?: string;
}

/** The first format: one deflated JSON document (read, never written any more). */
const MAGIC_V2 = Buffer.from("TASLC2\n");
/**
 * The format written: the magic line, then deflated lines of JSON: a header (the clock, and how
 * many accounts and ledger entries follow), one line per account, one per ledger entry. Lines
 * let a large state be written and read a piece at a time instead of as one string of hundreds of
 * megabytes, and a count in the header tells a cut-off file from a whole one.
 */
const MAGIC = Buffer.from("TASLC3\n");
/** Text handed to the compressor at once: small enough that making it never holds the event loop. */
const CHUNK_CHARS = 64 * 1024;

interface Header {
  readonly clock: BlockClockState;
  readonly accounts: number;
  readonly ledger: number;
  readonly keySeed?: string;
}

/** The state as text, a chunk of whole lines at a time. */
async function* linesOf(state: ChainState): AsyncGenerator<string> {
  const header: Header = {
    clock: state.clock,
    accounts: state.accounts.length,
    ledger: state.ledger.length,
    ...(state.keySeed === undefined ? {} : { keySeed: state.keySeed }),
  };
  let chunk = `${JSON.stringify(header)}\n`;
  for (const account of state.accounts) {
    chunk += `${JSON.stringify(account)}\n`;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = "";
    }
  }
  for (const entry of state.ledger) {
    chunk += `${JSON.stringify(entry)}\n`;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = "";
    }
  }
  yield chunk;
}

export class ChainStateError extends Error {
  override readonly name = "ChainStateError";
}

/** The state in `path`, or undefined when there is no file there. */
export async function readChainState(path: string): Promise<ChainState | undefined> {
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const magic = Buffer.alloc(MAGIC.length);
    const { bytesRead } = await file.read(magic, 0, MAGIC.length, 0);
    if (bytesRead === MAGIC_V2.length && magic.equals(MAGIC_V2)) {
      const rest = await file.readFile();
      return JSON.parse(inflateRawSync(rest).toString("utf8")) as ChainState;
    }
    if (bytesRead !== MAGIC.length || !magic.equals(MAGIC)) {
      throw new ChainStateError(`${path} is not a local chain state file`);
    }
    return await readLines(file.createReadStream({ start: MAGIC.length, autoClose: false }), path);
  } finally {
    await file.close();
  }
}

async function readLines(input: NodeJS.ReadableStream, path: string): Promise<ChainState> {
  const inflated = input.pipe(createInflateRaw());
  input.on("error", (error) => inflated.destroy(error));
  let header: Header | undefined;
  const accounts: [string, SavedAccount][] = [];
  const ledger: NewLedgerEntry[] = [];
  for await (const line of createInterface({ input: inflated, crlfDelay: Number.POSITIVE_INFINITY })) {
    if (line === "") continue;
    const value: unknown = JSON.parse(line);
    if (header === undefined) header = value as Header;
    else if (accounts.length < header.accounts) accounts.push(value as [string, SavedAccount]);
    else ledger.push(value as NewLedgerEntry);
  }
  if (header === undefined || accounts.length !== header.accounts || ledger.length !== header.ledger) {
    throw new ChainStateError(`${path} is cut short: it does not hold what its header counts`);
  }
  return {
    accounts,
    clock: header.clock,
    ledger,
    ...(typeof header.keySeed === "string" ? { keySeed: header.keySeed } : {}),
  };
}

/**
 * Writes the state so that a crash at any moment leaves either the old file or the new one, never
 * a part of one: into a temporary file beside it, a chunk at a time through the compressor (so
 * a large chain never holds the event loop for long), flushed to the disk, renamed over the old
 * one, and the rename flushed too. Returns the bytes written.
 */
export async function writeChainState(path: string, state: ChainState, mode = 0o600): Promise<number> {
  const directory = dirname(path);
  await mkdir(directory, { recursive: true });
  const temporary = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  // `flush`: the file's data reaches the disk before it is closed, so before it is renamed.
  const out = createWriteStream(temporary, { flags: "wx", mode, flush: true });
  out.write(MAGIC);
  try {
    await pipeline(Readable.from(linesOf(state)), createDeflateRaw({ level: 1 }), out);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await rename(temporary, path);
  await syncDirectory(directory);
  return out.bytesWritten;
}

/**
 * Removes the temporary files a write into `path` left when its process was killed mid-write
 * (they are never read). Only for a state file no other process writes.
 */
export async function removeStaleTemporaries(path: string): Promise<void> {
  const directory = dirname(path);
  const prefix = `${basename(path)}.`;
  let names: string[];
  try {
    names = await readdir(directory);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.startsWith(prefix) && /^[0-9a-f]{8}\.tmp$/.test(name.slice(prefix.length))) {
      await rm(join(directory, name), { force: true });
    }
  }
}

/** Flushes a directory's entries (a rename) to the disk; where directories cannot be opened, nothing. */
async function syncDirectory(directory: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(directory, "r");
    await handle.sync();
  } catch {
    // Windows cannot open a directory; its rename is as durable as it gets.
  } finally {
    await handle?.close();
  }
}
