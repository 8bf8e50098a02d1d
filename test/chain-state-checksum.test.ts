/**
 * The local chain's state file carries a sha256 of its content: a file damaged inside (a few bytes
 * changed on the disk) is refused at start with a message naming it and saying it is damaged, and
 * is left exactly as it was; an intact one loads; one of the older format without a checksum loads
 * with a warning.
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateKeyPairSigner } from "@solana/kit";
import { beforeAll, describe, expect, it } from "vitest";
import { startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { useCleanups } from "./support/cleanups.ts";

const cleanup = useCleanups();
const catalog = loadCatalog();
const SLOT_MS = 400;
/** Copies damaged at offsets spread over the file. */
const COPIES = 12;

describe("a saved state file", () => {
  let directory: string;
  let intact: string;
  let wallet: string;
  let bytes: Buffer;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), "chain-state-checksum-"));
    intact = join(directory, "chain.bin");
    wallet = (await generateKeyPairSigner()).address;
    const first = await startLocalChain({ catalog, port: undefined, statePath: intact, slotMs: SLOT_MS });
    first.chain.airdrop(wallet, 1_234_567n);
    await first.close();
    bytes = await readFile(intact);
    return () => rm(directory, { recursive: true, force: true });
  });

  it("is refused when 4 bytes anywhere inside are zeroed, with a message naming it and saying it is damaged, and is left as it was", async () => {
    // A whole genesis' state: large enough that the offsets fall in every part of it.
    expect(bytes.length).toBeGreaterThan(500_000);
    for (let i = 0; i < COPIES; i++) {
      let offset = Math.floor(((i + 0.5) * bytes.length) / COPIES);
      // Zeroing bytes that are zero already changes nothing: the next 4 that are not.
      while (bytes.subarray(offset, offset + 4).every((b) => b === 0)) offset++;
      const damaged = Buffer.from(bytes);
      damaged.fill(0, offset, Math.min(offset + 4, damaged.length));
      const path = join(directory, `damaged-${i}.bin`);
      await writeFile(path, damaged);
      const started = startLocalChain({ catalog, port: undefined, statePath: path, slotMs: SLOT_MS });
      started.then((chain) => cleanup(() => chain.close())).catch(() => {});
      await expect(started, `zeroed at ${offset} of ${bytes.length}`).rejects.toThrow(
        new RegExp(`${path.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&")} is damaged`),
      );
      expect((await readFile(path)).equals(damaged), `the file zeroed at ${offset} was changed`).toBe(true);
    }
  }, 60_000);

  it("loads when intact", async () => {
    const path = join(directory, "copy.bin");
    await copyFile(intact, path);
    const local = await startLocalChain({ catalog, port: undefined, statePath: path, slotMs: SLOT_MS });
    cleanup(() => local.close());
    expect(local.chain.account(wallet)?.lamports).toBe(1_234_567n);
  });

  it("of the older format (no checksum) loads, with a warning that it was not checked", async () => {
    // The format before the checksum: the same lines under the magic TASLC3, nothing after them.
    const older = Buffer.concat([Buffer.from("TASLC3\n"), bytes.subarray(7, bytes.length - 32)]);
    expect(bytes.subarray(0, 7).toString()).toBe("TASLC4\n");
    const path = join(directory, "older.bin");
    await writeFile(path, older);
    const warnings: string[] = [];
    const local = await startLocalChain({
      catalog,
      port: undefined,
      statePath: path,
      slotMs: SLOT_MS,
      log: (level, message) => {
        if (level === "warn") warnings.push(message);
      },
    });
    cleanup(() => local.close());
    expect(local.chain.account(wallet)?.lamports).toBe(1_234_567n);
    expect(warnings).toContainEqual(expect.stringContaining("no checksum"));
  });
});
