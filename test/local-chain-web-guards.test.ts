/**
 * What a web page and a cheatcode can do to the embedded chain (issue 53, N2). A public page is
 * not served: its preflight gets no `access-control-allow-origin` and no Private Network Access
 * grant, unless LOCAL_SOLANA_ALLOWED_ORIGINS names its origin; tools that send no Origin (kit,
 * curl) and pages on localhost keep working. And no cheatcode writes a program, a sysvar, a
 * loader's account or a program the service depends on: one surfnet_setAccount on the SPL Token
 * program used to break every token transaction until a restart. Real ports, real clients.
 */
import {
  type Address,
  address,
  createSolanaRpc,
  generateKeyPairSigner,
  getAddressEncoder,
  getProgramDerivedAddress,
} from "@solana/kit";
import {
  findAssociatedTokenPda,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { ConfigError, loadConfig } from "../src/config.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { type ChainClient, createChainClient } from "./support/chain-client.ts";

const catalog = loadCatalog();
const USDC = catalog.tokens.find((t) => t.symbol === "USDC")?.mint as Address;
const BPF_LOADER_UPGRADEABLE = address("BPFLoaderUpgradeab1e11111111111111111111111");

describe("cheatcodes and the accounts the chain runs on", () => {
  let local: RunningLocalChain;
  let chain: ChainClient;

  beforeAll(async () => {
    local = await startLocalChain({ catalog, port: 0, statePath: undefined, slotMs: 400 });
    chain = createChainClient(local.url as string);
  });
  afterAll(async () => {
    await local?.close();
  });

  /** A USDC transfer between two new wallets, through kit; throws when it fails. */
  const transferUsdc = async () => {
    const [from, to] = [await generateKeyPairSigner(), await generateKeyPairSigner()];
    await chain.airdrop(from.address, 1n);
    await chain.setTokenBalance(from.address, USDC, 5_000_000n);
    await chain.setTokenBalance(to.address, USDC, 0n);
    const ata = async (owner: Address) =>
      (await findAssociatedTokenPda({ owner, mint: USDC, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0];
    await chain.sendAndConfirm(from, [
      getTransferCheckedInstruction({
        source: await ata(from.address),
        mint: USDC,
        destination: await ata(to.address),
        authority: from,
        amount: 1_000_000n,
        decimals: 6,
      }),
    ]);
    return (await chain.rpc.getTokenAccountBalance(await ata(to.address)).send()).value.amount;
  };

  it("refuses to replace the SPL Token program, naming it, and token transfers still work", async () => {
    const answer = await chain.raw("surfnet_setAccount", [
      TOKEN_PROGRAM_ADDRESS,
      { lamports: 1_000_000, data: "00", owner: "11111111111111111111111111111111", executable: false },
    ]);
    expect(answer.error).toMatchObject({ code: -32602 });
    const message = (answer.error as { message: string }).message;
    expect(message).toContain(TOKEN_PROGRAM_ADDRESS);
    expect(message).toContain("the SPL Token program");
    const program = await chain.rpc.getAccountInfo(TOKEN_PROGRAM_ADDRESS, { encoding: "base64" }).send();
    expect(program.value).toMatchObject({ executable: true, owner: BPF_LOADER_UPGRADEABLE });
    expect(await transferUsdc()).toBe("1000000");
  });

  it("refuses sysvars, builtins, loader-owned accounts and the programs the service depends on", async () => {
    const [programData] = await getProgramDerivedAddress({
      programAddress: BPF_LOADER_UPGRADEABLE,
      seeds: [getAddressEncoder().encode(TOKEN_PROGRAM_ADDRESS)],
    });
    const owned = await chain.rpc.getAccountInfo(programData, { encoding: "base64" }).send();
    // The SPL Token program's data account, if this runtime keeps one, is the loader's; the Stake
    // program is an upgradeable program, so LiteSVM's copy is owned by that loader either way.
    const loaderOwned = owned.value === null ? "Stake11111111111111111111111111111111111111" : programData;
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["SysvarC1ock11111111111111111111111111111111", { lamports: 1 }, /is a sysvar/],
      ["SysvarRent111111111111111111111111111111111", { data: "00" }, /is a sysvar/],
      [loaderOwned, { data: "00" }, /BPF Loader Upgradeable|executable account/],
      ["Vote111111111111111111111111111111111111111", { lamports: 1 }, /the Vote program/],
      [
        "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL",
        { lamports: 1 },
        /the Associated Token Account program/,
      ],
      ["MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr", { lamports: 1 }, /the Memo program/],
      ["ComputeBudget111111111111111111111111111111", { lamports: 1 }, /the Compute Budget program/],
      ["TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb", { lamports: 1 }, /the Token-2022 program/],
      ["11111111111111111111111111111111", { lamports: 1 }, /the System program/],
    ];
    for (const [target, update, rule] of cases) {
      const answer = await chain.raw("surfnet_setAccount", [target, update]);
      expect(answer.error, target).toMatchObject({ code: -32602 });
      const message = (answer.error as { message: string }).message;
      expect(message, target).toContain(target);
      expect(message, target).toMatch(rule);
    }
    expect(await transferUsdc()).toBe("1000000");
  });

  it("refuses to make an account a program: executable, or owned by a loader or the sysvar owner", async () => {
    const target = (await generateKeyPairSigner()).address;
    for (const [update, rule] of [
      [{ lamports: 1_000_000, executable: true }, /^Invalid params: executable: /],
      [{ lamports: 1_000_000, owner: BPF_LOADER_UPGRADEABLE }, /^Invalid params: owner: .* is a loader/],
      [{ lamports: 1_000_000, owner: "NativeLoader1111111111111111111111111111111" }, /a loader/],
      [{ lamports: 1_000_000, owner: "Sysvar1111111111111111111111111111111111111" }, /the sysvar owner/],
    ] as const) {
      const answer = await chain.raw("surfnet_setAccount", [target, update]);
      expect(answer.error, JSON.stringify(update)).toMatchObject({ code: -32602 });
      expect((answer.error as { message: string }).message, JSON.stringify(update)).toMatch(rule);
      expect((answer.error as { message: string }).message).toContain(target);
    }
    expect((await chain.rpc.getAccountInfo(target).send()).value).toBeNull();
    // surfnet_setTokenAccount with a loader as its token program: refused the same way.
    const answer = await chain.raw("surfnet_setTokenAccount", [
      target,
      USDC,
      { amount: 1 },
      BPF_LOADER_UPGRADEABLE,
    ]);
    expect(answer.error).toMatchObject({ code: -32602, message: expect.stringMatching(/is a loader/) });
    // A wallet's SOL and tokens are still theirs to set.
    expect(await chain.raw("surfnet_setAccount", [target, { lamports: 1_000_000 }])).not.toHaveProperty(
      "error",
    );
    await chain.setTokenBalance(target, USDC, 7n);
  });
});

describe("web pages and the chain's port", () => {
  const started: RunningLocalChain[] = [];
  const startWith = async (env: Record<string, string>) => {
    const local = await startLocalChain({
      catalog,
      port: 0,
      statePath: undefined,
      slotMs: 400,
      allowedOrigins: loadConfig(env).solana.local.allowedOrigins,
    });
    started.push(local);
    return local;
  };
  afterAll(async () => {
    await Promise.all(started.map((local) => local.close()));
  });

  /** A Chrome-style preflight from `origin` for a JSON POST, asking for Private Network Access. */
  const preflight = (url: string, origin: string) =>
    fetch(url, {
      method: "OPTIONS",
      headers: {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
        "access-control-request-private-network": "true",
      },
    });
  const post = (url: string, headers: Record<string, string>) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getHealth" }),
    });

  it("gives a public page no allow-origin and no private-network grant, and runs none of its requests", async () => {
    const url = (await startWith({})).url as string;
    const asked = await preflight(url, "https://evil.example");
    expect(asked.headers.get("access-control-allow-origin")).toBeNull();
    expect(asked.headers.get("access-control-allow-private-network")).toBeNull();
    const sent = await post(url, { origin: "https://evil.example" });
    expect(sent.status).toBe(403);
    expect(sent.headers.get("access-control-allow-origin")).toBeNull();
    expect(await sent.text()).toContain("LOCAL_SOLANA_ALLOWED_ORIGINS");
    // "null" (a sandboxed frame, a file: page) is no origin of this machine either.
    expect((await post(url, { origin: "null" })).status).toBe(403);
  });

  it("serves tools that send no Origin (kit, curl) and pages served from this machine", async () => {
    const url = (await startWith({})).url as string;
    expect(await createSolanaRpc(url).getHealth().send()).toBe("ok");
    const plain = await post(url, {});
    expect(plain.status).toBe(200);
    expect(plain.headers.get("access-control-allow-origin")).toBeNull();
    for (const origin of ["http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:5173"]) {
      const asked = await preflight(url, origin);
      expect(asked.status, origin).toBe(200);
      expect(asked.headers.get("access-control-allow-origin"), origin).toBe(origin);
      // A page on this machine needs no private-network grant, and gets none.
      expect(asked.headers.get("access-control-allow-private-network"), origin).toBeNull();
      const answered = await post(url, { origin });
      expect(answered.headers.get("access-control-allow-origin"), origin).toBe(origin);
      expect(await answered.json()).toEqual({ jsonrpc: "2.0", result: "ok", id: 1 });
    }
  });

  it("with LOCAL_SOLANA_ALLOWED_ORIGINS=https://app.example, grants that origin alone", async () => {
    const url = (await startWith({ LOCAL_SOLANA_ALLOWED_ORIGINS: "https://app.example" })).url as string;
    const listed = await preflight(url, "https://app.example");
    expect(listed.status).toBe(200);
    expect(listed.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(listed.headers.get("access-control-allow-private-network")).toBe("true");
    const answered = await post(url, { origin: "https://app.example" });
    expect(answered.headers.get("access-control-allow-origin")).toBe("https://app.example");
    expect(await answered.json()).toEqual({ jsonrpc: "2.0", result: "ok", id: 1 });
    const other = await preflight(url, "https://other.example");
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect(other.headers.get("access-control-allow-private-network")).toBeNull();
    expect(await createSolanaRpc(url).getHealth().send()).toBe("ok");
  });

  it("refuses a public page's WebSocket to the PubSub port (browsers apply no CORS there), not a tool's", async () => {
    const pubsub = (await startWith({})).pubsub?.url as string;
    const opened = (origin: string | undefined) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(pubsub, origin === undefined ? {} : { origin });
        socket.on("open", () => {
          socket.close();
          resolve(101);
        });
        socket.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
        socket.on("error", () => {});
      });
    expect(await opened("https://evil.example")).toBe(403);
    expect(await opened(undefined)).toBe(101);
    expect(await opened("http://localhost:3000")).toBe(101);
  });

  it("refuses LOCAL_SOLANA_ALLOWED_ORIGINS values that are not origins, and * above all, naming the variable", () => {
    for (const value of ["*", "app.example", "https://app.example/path", "ftp://app.example"]) {
      expect(() => loadConfig({ LOCAL_SOLANA_ALLOWED_ORIGINS: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ LOCAL_SOLANA_ALLOWED_ORIGINS: value }), value).toThrow(
        /LOCAL_SOLANA_ALLOWED_ORIGINS must be a comma-separated list of origins/,
      );
    }
  });
});
