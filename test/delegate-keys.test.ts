/**
 * The delegates per (owner, wallet): known-answer vectors, recomputed here by an independent path
 * (RFC 5869's HKDF written out with HMAC-SHA256, and the Ed25519 public key from @solana/keys'
 * WebCrypto), so a change to the derivation, which would orphan every approval ever signed, fails
 * here; the separation of owners, wallets and secrets; DELEGATE_SEED's file rules; and no secret
 * in logs, metrics, errors or `inspect`, in a real service that ran a real transfer.
 */
import { createHmac } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inspect } from "node:util";
import { getAddressFromPublicKey } from "@solana/addresses";
import { createKeyPairFromPrivateKeyBytes } from "@solana/keys";
import { type Address, generateKeyPairSigner, getBase58Decoder } from "@solana/kit";
import { afterAll, describe, expect, it } from "vitest";
import {
  createDelegateKeys,
  delegateInfo,
  delegateSeed,
  takerInfo,
  takerSeed,
} from "../src/chain/delegate-keys.ts";
import { loadDelegateSeed } from "../src/chain/delegate-seed.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { startServer } from "./support/start-server.ts";
import { createTransferOwner, until } from "./support/transfer-owner.ts";

const SECRET = Uint8Array.from({ length: 32 }, (_, i) => i);
const WALLET_1 = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const WALLET_2 = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T";

/** Known answers under SECRET (bytes 0..31): owner, wallet, Ed25519 seed (hex), delegate address. */
const VECTORS: [string, string, string, string][] = [
  [
    "anonymous",
    WALLET_1,
    "267ca2f75d436cb07d7b9232de4a7a3223a992088d772966b6d05cfa40efd83c",
    "8nBFmxQz4ykTeTFMtjsgSwiryPWfp5ozN18otjv16VWZ",
  ],
  [
    "alice",
    WALLET_1,
    "006f810dad0ea1fd18afff06d2d2ff5dc6f92f0bc2b9cd796c9b6d64b89727e8",
    "5aPXoxsEALstSDDEhXuGk5q7HETbgZRRwRMa7NPvnU5k",
  ],
  [
    "mallory",
    WALLET_1,
    "3d90f06181705756b018eb7caa73436d0cca375a4c3cca43d2342c95c6722d89",
    "ThMwpuDikdgj63BDGTkVXWZCgFzSUQf84cJa3fo4FiE",
  ],
  [
    "alice",
    WALLET_2,
    "e9c572fb302abe37ba405ac6432e3723595a5dd70394f0af5a5e71ea6bc700d1",
    "EJn8iJqZPBcN1zB6JYJfvfkjPSpK23HEyGecTanLPBuE",
  ],
];

/** RFC 5869 written out: extract with the salt, then one expand block (32 bytes fit in one). */
function hkdfByHand(secret: Uint8Array, salt: string, info: Uint8Array): Buffer {
  const prk = createHmac("sha256", salt).update(secret).digest();
  return createHmac("sha256", prk)
    .update(info)
    .update(Buffer.from([1]))
    .digest();
}

describe("delegate derivation", () => {
  it.each(VECTORS)("known answer: (%s, %s)", async (owner, wallet, seedHex, address) => {
    expect(Buffer.from(delegateSeed(SECRET, owner, wallet)).toString("hex")).toBe(seedHex);
    const info = Buffer.concat(
      ["token-agent-service/delegate/v1", owner, wallet].flatMap((part) => {
        const bytes = Buffer.from(part, "utf8");
        return [Buffer.from([bytes.length >> 8, bytes.length & 0xff]), bytes];
      }),
    );
    expect(hkdfByHand(SECRET, "token-agent-service", info).toString("hex")).toBe(seedHex);
    const pair = await createKeyPairFromPrivateKeyBytes(Buffer.from(seedHex, "hex"));
    expect(await getAddressFromPublicKey(pair.publicKey)).toBe(address);
    expect(createDelegateKeys({ secret: SECRET }).addressOf(owner, wallet)).toBe(address);
  });

  it("gives the same address for the same (secret, owner, wallet), and another when any one changes", () => {
    const keys = createDelegateKeys({ secret: SECRET });
    const again = createDelegateKeys({ secret: Uint8Array.from(SECRET) });
    const other = createDelegateKeys({ secret: Uint8Array.from(SECRET, (b) => b ^ 1) });
    const base = keys.addressOf("alice", WALLET_1);
    expect(again.addressOf("alice", WALLET_1)).toBe(base);
    expect(keys.addressOf("alice", WALLET_1)).toBe(base);
    const changed = [
      keys.addressOf("alicf", WALLET_1),
      keys.addressOf("alice", WALLET_2),
      other.addressOf("alice", WALLET_1),
      keys.addressOf("", WALLET_1),
    ];
    expect(new Set([base, ...changed]).size).toBe(5);
    // Length prefixes: moving a character across the owner/wallet boundary is another input.
    expect(delegateInfo("ab", "c")).not.toEqual(delegateInfo("a", "bc"));
    expect(keys.addressOf("ab", "c")).not.toBe(keys.addressOf("a", "bc"));
  });

  it("signs with the key whose address it gives", async () => {
    const key = createDelegateKeys({ secret: SECRET }).keyOf("alice", WALLET_1);
    const message = new TextEncoder().encode("a transfer");
    const pair = await createKeyPairFromPrivateKeyBytes(delegateSeed(SECRET, "alice", WALLET_1));
    const valid = await crypto.subtle.verify("Ed25519", pair.publicKey, key.sign(message), message);
    expect(valid).toBe(true);
  });

  it("shows no secret when inspected or serialised", () => {
    const keys = createDelegateKeys({ secret: SECRET });
    const key = keys.keyOf("alice", WALLET_1);
    const seed = Buffer.from(delegateSeed(SECRET, "alice", WALLET_1));
    for (const shown of [
      inspect(keys, { depth: 10, showHidden: true }),
      JSON.stringify(keys),
      inspect(key),
      JSON.stringify(key),
    ]) {
      for (const secret of [Buffer.from(SECRET), seed]) {
        for (const encoding of encodingsOf(secret)) expect(shown).not.toContain(encoding);
      }
    }
  });
});

/**
 * Known answers of a swap run's taker under SECRET: owner, wallet, agent, slot (its idempotency
 * key), Ed25519 seed (hex), address. Computed by hkdfByHand with the label
 * "token-agent-service/swap-taker/v1": a change would make a retry after a crash sign with another
 * taker than the transaction it may have sent.
 */
const TAKER_VECTORS: [string, string, string, string, string, string][] = [
  [
    "alice",
    WALLET_1,
    "agent-1",
    "agent-1.lx2b3c00",
    "1bf44ab28a94d057e39c8865a4fe9e3ae64aa5dd6b186012fd8b301a1e2304da",
    "Dd4tN5e6vd3m91ky1BgU7DG8oqYAaQ2vRekfFa7vGZyb",
  ],
  [
    "alice",
    WALLET_1,
    "agent-1",
    "agent-1.lx2b3c01",
    "d70cc57c7a4ef4153b42ba71b5a96c98716a63b49ad024ce676f3d968e68ad9b",
    "5pQ3omb9hTtVDAQeXSFwUBR4mxEfDdhrmQSwurDc6kYo",
  ],
  [
    "alice",
    WALLET_1,
    "agent-2",
    "agent-2.lx2b3c00",
    "0ee7471559166af9327df43eb091cb3f2b4b2a5edbb904ae7ff9a30a0a00c222",
    "51o3QDu2JGRc842fF63FuwhZvbNaYuVJ6yXwSxzMXVAK",
  ],
  [
    "mallory",
    WALLET_1,
    "agent-1",
    "agent-1.lx2b3c00",
    "46e7512f3758bd771ef70ecb6decf6c6082e66f549adab4b11e61b781a3b7a60",
    "6mJyArDJSY45intpz1CYCv8Q6eK35qCkn2x6RPdPC8ft",
  ],
  [
    "alice",
    WALLET_2,
    "agent-1",
    "agent-1.lx2b3c00",
    "4ef5aefd2756560ba908bf877051a26d609d88e7d3d42b301ba58e1fd34eddf8",
    "GgfpRQSXLbddJJJgfbVfdBdU1MUgmcTwJfUbcRJishPY",
  ],
];

describe("a swap run's taker", () => {
  it.each(TAKER_VECTORS)(
    "known answer: (%s, %s, %s, %s)",
    async (owner, wallet, agent, slot, seedHex, address) => {
      expect(Buffer.from(takerSeed(SECRET, owner, wallet, agent, slot)).toString("hex")).toBe(seedHex);
      const info = Buffer.concat(
        ["token-agent-service/swap-taker/v1", owner, wallet, agent, slot].flatMap((part) => {
          const bytes = Buffer.from(part, "utf8");
          return [Buffer.from([bytes.length >> 8, bytes.length & 0xff]), bytes];
        }),
      );
      expect(takerInfo(owner, wallet, agent, slot)).toEqual(info);
      expect(hkdfByHand(SECRET, "token-agent-service", info).toString("hex")).toBe(seedHex);
      const pair = await createKeyPairFromPrivateKeyBytes(Buffer.from(seedHex, "hex"));
      expect(await getAddressFromPublicKey(pair.publicKey)).toBe(address);
      expect(createDelegateKeys({ secret: SECRET }).takerOf(owner, wallet, agent, slot).address).toBe(
        address,
      );
    },
  );

  it("is never the (owner, wallet) delegate, and differs per slot, agent, owner and wallet", () => {
    const keys = createDelegateKeys({ secret: SECRET });
    const takers = TAKER_VECTORS.map((v) => v[5]);
    expect(new Set(takers).size).toBe(takers.length);
    expect(takers).not.toContain(keys.addressOf("alice", WALLET_1));
    // The same inputs, the same taker: a retry after a crash signs with the key it signed with.
    expect(keys.takerOf("alice", WALLET_1, "agent-1", "agent-1.lx2b3c00").address).toBe(takers[0]);
    expect(takerInfo("ab", "c", "d", "e")).not.toEqual(takerInfo("a", "bc", "d", "e"));
  });
});

describe("DELEGATE_SEED's file", () => {
  const dir = mkdtempSync(join(tmpdir(), "delegate-seed-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: Buffer | string, mode = 0o600) => {
    const path = join(dir, name);
    writeFileSync(path, content, { mode });
    chmodSync(path, mode);
    return path;
  };

  it("takes 32 raw bytes or 64 hex digits, readable by its owner alone", async () => {
    expect(await loadDelegateSeed(file("raw", Buffer.from(SECRET)))).toEqual(SECRET);
    expect(await loadDelegateSeed(file("hex", `${Buffer.from(SECRET).toString("hex")}\n`))).toEqual(SECRET);
  });

  it("refuses a file others can read, one of another size, and one that is missing, naming DELEGATE_SEED and never its content", async () => {
    const hex = Buffer.from(SECRET).toString("hex");
    await expect(loadDelegateSeed(file("open", Buffer.from(SECRET), 0o644))).rejects.toThrow(
      /DELEGATE_SEED names a file readable by group or others \(mode 644\): run chmod 600/,
    );
    const short = loadDelegateSeed(file("short", hex.slice(0, 40)));
    await expect(short).rejects.toThrow(
      /DELEGATE_SEED is not a delegate seed file \(32 random bytes, or 64 hex digits\)/,
    );
    await expect(short).rejects.not.toThrow(hex.slice(0, 40));
    await expect(loadDelegateSeed(join(dir, "missing"))).rejects.toThrow(
      /DELEGATE_SEED names a file that cannot be read/,
    );
  });
});

describe("no secret leaves the service", () => {
  const dir = mkdtempSync(join(tmpdir(), "delegate-leak-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the seed and the derived keys appear in no log line, metric or error, through a real transfer", async () => {
    const secret = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) & 0xff));
    const path = join(dir, "delegate.seed");
    writeFileSync(path, secret, { mode: 0o600 });
    const server = await startServer({
      env: {
        DELEGATE_SEED: path,
        LOG_LEVEL: "debug",
        SCHEDULER_ENABLED: "true",
        SCHEDULE_TIME_SCALE: "1200",
        SCHEDULER_POLL_INTERVAL_MS: "100",
      },
    });
    try {
      const chain = createChainClient(server.localChain?.url as string);
      const owner = createTransferOwner({ baseUrl: server.baseUrl, chain });
      const wallet = await generateKeyPairSigner();
      const usdc = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
      const agentId = (
        await owner.ok("POST", "/v1/agents", {
          type: "transfer",
          config: {
            source: wallet.address,
            destination: (await generateKeyPairSigner()).address,
            amount: 1,
            token: "USDC",
            schedule: "hourly",
          },
        })
      ).agentId as string;
      await chain.airdrop(wallet.address, 1n);
      await chain.setTokenBalance(wallet.address, usdc, 10_000_000n);
      const approval = await owner.approve(agentId, 5, wallet);
      // The delegate is the one derived from this file's secret.
      expect(approval.delegate).toBe(createDelegateKeys({ secret }).addressOf("anonymous", wallet.address));
      await until(
        async () => ((await owner.runsOf(agentId)).some((r) => r.outcome === "succeeded") ? true : undefined),
        20_000,
        "a run succeeded",
      );
      const errors = [
        await owner.rest("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance: -1 }),
        await owner.rest("POST", "/v1/agents/nosuchagent00000000000:prepareApproval", { allowance: 1 }),
        await owner.rest("GET", "/v1/executor"),
      ].map((r) => JSON.stringify(r.json));
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      const everything = [
        JSON.stringify(server.logs),
        metrics,
        ...errors,
        inspect(server.context, { depth: 6 }),
      ].join("\n");
      expect(server.logs.length).toBeGreaterThan(10);
      const derived = Buffer.from(delegateSeed(secret, "anonymous", wallet.address));
      for (const key of [secret, derived]) {
        for (const encoding of encodingsOf(key)) expect(everything).not.toContain(encoding);
      }
    } finally {
      await server.close();
    }
  });
});

/** How a 32-byte secret could show up in text: hex, base64, base64url, base58, a JSON byte array. */
function encodingsOf(secret: Buffer): string[] {
  return [
    secret.toString("hex"),
    secret.toString("base64").replace(/=+$/, ""),
    secret.toString("base64url"),
    getBase58Decoder().decode(secret),
    JSON.stringify([...secret]).slice(1, -1),
  ];
}
