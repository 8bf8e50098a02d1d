import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createDeflateRaw, createInflateRaw, inflateRawSync } from "node:zlib";
import type { BlockClockState } from "../runtime/block-clock.ts";
import type { NewLedgerEntry } from "../runtime/ledger.ts";

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

/** The first format: one deflated JSON document (read, never written any more; no checksum). */
const MAGIC_V2 = Buffer.from("TASLC2\n");
/** The second: TASLC4's lines without its checksum (read, never written any more). */
const MAGIC_V3 = Buffer.from("TASLC3\n");
/**
 * The format written: the magic line, then deflated lines of JSON: a header (the clock, and how
 * many accounts and ledger entries follow), one line per account, one per ledger entry; then the
 * sha256 of every byte before it (32 bytes). Lines let a large state be written and read a piece
 * at a time instead of as one string of hundreds of megabytes, and a count in the header tells a
 * cut-off file from a whole one. The checksum tells a file damaged inside (a few bytes changed on
 * the disk) from a whole one: without it, such a file could still inflate and parse, and load a
 * chain that is not the one saved.
 */
const MAGIC = Buffer.from("TASLC4\n");
const CHECKSUM_BYTES = 32;
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

/** What was read, and whether a checksum vouched for it (a file of an older format has none). */
export interface ReadChainState {
  readonly state: ChainState;
  readonly checked: boolean;
}

/**
 * The state in `path`, or undefined when there is no file there. A file damaged inside (its
 * checksum does not match, or what it holds does not inflate or parse) is refused with a
 * ChainStateError naming it; it is only read, never changed.
 */
export async function readChainState(path: string): Promise<ChainState | undefined> {
  return (await readCheckedChainState(path))?.state;
}

/** As readChainState, telling also whether the file had a checksum (older files load unchecked). */
export async function readCheckedChainState(path: string): Promise<ReadChainState | undefined> {
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
      return {
        state: damagedIfThrows(path, () => JSON.parse(inflateRawSync(rest).toString("utf8"))),
        checked: false,
      };
    }
    if (bytesRead === MAGIC.length && magic.equals(MAGIC_V3)) {
      const lines = file.createReadStream({ start: MAGIC.length, autoClose: false });
      return { state: await readLines(lines, path), checked: false };
    }
    if (bytesRead !== MAGIC.length || !magic.equals(MAGIC)) {
      throw new ChainStateError(`${path} is not a local chain state file (or it is damaged at its start)`);
    }
    const { size } = await file.stat();
    const end = size - CHECKSUM_BYTES;
    if (end <= MAGIC.length) throw new ChainStateError(`${path} is damaged: it is cut short of its checksum`);
    const written = Buffer.alloc(CHECKSUM_BYTES);
    await file.read(written, 0, CHECKSUM_BYTES, end);
    // The whole content is checked before any of it is parsed: a damaged file is refused as one,
    // never with whatever error its damaged bytes happen to give the parser.
    const hash = createHash("sha256").update(MAGIC);
    for await (const chunk of file.createReadStream({
      start: MAGIC.length,
      end: end - 1,
      autoClose: false,
    })) {
      hash.update(chunk as Buffer);
    }
    if (!hash.digest().equals(written)) {
      throw new ChainStateError(
        `${path} is damaged: its content does not match its checksum (sha256); it was left as it is`,
      );
    }
    const lines = file.createReadStream({ start: MAGIC.length, end: end - 1, autoClose: false });
    return { state: await readLines(lines, path), checked: true };
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
  let number = 0;
  try {
    for await (const line of createInterface({ input: inflated, crlfDelay: Number.POSITIVE_INFINITY })) {
      number++;
      if (line === "") continue;
      const value: unknown = damagedIfThrows(path, () => JSON.parse(line), `line ${number}`);
      if (header === undefined) header = value as Header;
      else if (accounts.length < header.accounts) accounts.push(value as [string, SavedAccount]);
      else ledger.push(value as NewLedgerEntry);
    }
  } catch (error) {
    if (error instanceof ChainStateError) throw error;
    // The compressed stream itself is broken (zlib's "invalid stored block lengths", say).
    if ((error as NodeJS.ErrnoException).code?.startsWith("Z_"))
      throw new ChainStateError(`${path} is damaged: its content does not inflate`, { cause: error });
    throw error;
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

/** `read()`, or a ChainStateError saying the file is damaged where what it holds does not parse. */
function damagedIfThrows<T>(path: string, read: () => T, where?: string): T {
  try {
    return read();
  } catch (error) {
    throw new ChainStateError(
      `${path} is damaged: ${where === undefined ? "its content" : where} is not what it should be`,
      { cause: error },
    );
  }
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
    await pipeline(Readable.from(linesOf(state)), createDeflateRaw({ level: 1 }), withChecksum(MAGIC), out);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await rename(temporary, path);
  await syncDirectory(directory);
  return out.bytesWritten;
}

/** Passes bytes through and ends with the sha256 of `first` and all of them (the file's checksum). */
function withChecksum(first: Buffer): Transform {
  const hash = createHash("sha256").update(first);
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
    flush(done) {
      done(null, hash.digest());
    },
  });
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

/**
 * Where a chain's genesis is cached as a state file (../start-local-chain.ts loads it from here):
 * node_modules/.cache/token-agent-service of the install that holds LiteSVM, the same directory
 * whether this runs from the sources or from the compiled dist/.
 */
export function defaultCacheDir(): string {
  const litesvm = createRequire(import.meta.url).resolve("litesvm/package.json");
  return join(dirname(dirname(litesvm)), ".cache", "token-agent-service");
}
