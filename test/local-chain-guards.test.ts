/**
 * What guards the embedded chain's power: its cheatcodes rewrite any account, so they are off in
 * production unless asked for; and its port answers only requests addressed to this machine, so a
 * web page that rebinds its own name to 127.0.0.1 cannot reach the faucet or the cheatcodes from a
 * browser. Real services and sockets throughout.
 */
import * as http from "node:http";
import { connect } from "node:net";
import { type Address, generateKeyPairSigner } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
/** Wrapped SOL: a token the chain's pools hold against USDC. */
const SOL = loadCatalog().tokens.find((t) => t.symbol === "SOL")?.mint as Address;

async function serve(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({ env });
  cleanup(() => server.close());
  return server;
}

describe("cheatcodes", () => {
  it("are on outside production, off under NODE_ENV=production unless LOCAL_SOLANA_CHEATCODES=true", () => {
    const cheatcodes = (env: Record<string, string>) => loadConfig(env).solana.local.cheatcodes;
    expect(cheatcodes({})).toBe(true);
    expect(cheatcodes({ NODE_ENV: "production", AUTH_MODE: "none" })).toBe(false);
    expect(cheatcodes({ NODE_ENV: "production", AUTH_MODE: "none", LOCAL_SOLANA_CHEATCODES: "true" })).toBe(
      true,
    );
    expect(cheatcodes({ LOCAL_SOLANA_CHEATCODES: "false" })).toBe(false);
    expect(() => loadConfig({ LOCAL_SOLANA_CHEATCODES: "sometimes" })).toThrow(
      /LOCAL_SOLANA_CHEATCODES must be true or false \(got "sometimes"\)/,
    );
  });

  it("a production service's chain answers them as unknown methods, and serves them when asked to", async () => {
    const wallet = (await generateKeyPairSigner()).address;
    const setAccount = (client: ReturnType<typeof createChainClient>) =>
      client.raw("surfnet_setAccount", [wallet, { lamports: 5_000_000_000 }]);

    const production = await serve({ NODE_ENV: "production" });
    const off = createChainClient(production.localChain?.url as string);
    expect(await setAccount(off)).toMatchObject({
      error: { code: -32601, message: "Method not found" },
    });
    expect(await off.raw("surfnet_setTokenAccount", [wallet, USDC, { amount: 1 }])).toMatchObject({
      error: { code: -32601 },
    });
    // Ours too: no one moves a pool's price on a chain that serves no cheatcodes.
    expect(await off.raw("surfnet_setTokenPrice", [SOL, 180])).toMatchObject({
      error: { code: -32601 },
    });
    // Nothing was written, and the rest of the chain serves.
    expect((await off.rpc.getBalance(wallet).send()).value).toBe(0n);
    expect(await off.raw("getHealth")).toMatchObject({ result: "ok" });
    expect(production.logs.find((l) => l.msg?.toString().includes("embedded local chain"))).toMatchObject({
      cheatcodes: false,
    });

    const asked = await serve({ NODE_ENV: "production", LOCAL_SOLANA_CHEATCODES: "true" });
    const on = createChainClient(asked.localChain?.url as string);
    expect(await setAccount(on)).not.toHaveProperty("error");
    expect((await on.rpc.getBalance(wallet).send()).value).toBe(5_000_000_000n);
  });
});

describe("the chain port's Host check", () => {
  let chain: RunningLocalChain;
  const rejected: string[] = [];

  beforeAll(async () => {
    chain = await startLocalChain({
      catalog: loadCatalog(),
      port: 0,
      statePath: undefined,
      slotMs: 400,
      allowedHosts: ["devbox.local"],
      onRejected: (reason) => rejected.push(reason),
    });
  });
  afterAll(async () => {
    await chain?.close();
  });

  /** A getHealth POST with `host` as its Host header: the status and the body. */
  const postWithHost = (host: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const { port } = new URL(chain.url as string);
      const body = '{"jsonrpc":"2.0","id":1,"method":"getHealth"}';
      const req = http.request(
        {
          host: "127.0.0.1",
          port,
          method: "POST",
          headers: { host, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let text = "";
          res.on("data", (chunk) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  it("answers loopback names, the bound address and configured names, with or without a port", async () => {
    const { port } = new URL(chain.url as string);
    for (const host of [
      `127.0.0.1:${port}`,
      "127.0.0.1",
      `localhost:${port}`,
      "LOCALHOST",
      `[::1]:${port}`,
      "devbox.local",
      `devbox.local:${port}`,
    ]) {
      const { status, text } = await postWithHost(host);
      expect([host, status, JSON.parse(text).result]).toEqual([host, 200, "ok"]);
    }
  });

  it("refuses any other name with 403, as a DNS-rebinding page would send it, and counts it", async () => {
    const { port } = new URL(chain.url as string);
    const before = rejected.length;
    for (const host of [
      `evil.example:${port}`,
      "evil.example",
      "127.0.0.1.evil.example",
      "localhost.evil",
      "[::2]",
    ]) {
      const { status, text } = await postWithHost(host);
      expect([host, status]).toEqual([host, 403]);
      expect(text).toMatch(/^Invalid Host header/);
      expect(text).toContain("LOCAL_SOLANA_ALLOWED_HOSTS");
    }
    expect(rejected.slice(before)).toEqual(["host", "host", "host", "host", "host"]);
  });

  it("refuses a request without a Host header (HTTP/1.0)", async () => {
    const { port } = new URL(chain.url as string);
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"requestAirdrop","params":["11111111111111111111111111111111",1]}';
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port: Number(port) });
      let text = "";
      socket.on("data", (chunk) => (text += chunk));
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
      socket.end(
        `POST / HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 403 /);
  });

  it("refuses bad LOCAL_SOLANA_ALLOWED_HOSTS values naming the variable", () => {
    expect(
      loadConfig({ LOCAL_SOLANA_ALLOWED_HOSTS: "devbox.local, Other.Host" }).solana.local.allowedHosts,
    ).toEqual(["devbox.local", "other.host"]);
    for (const value of ["devbox.local:8899", "http://devbox.local", "*", "a b"]) {
      expect(() => loadConfig({ LOCAL_SOLANA_ALLOWED_HOSTS: value }), value).toThrow(ConfigError);
      expect(() => loadConfig({ LOCAL_SOLANA_ALLOWED_HOSTS: value }), value).toThrow(
        /LOCAL_SOLANA_ALLOWED_HOSTS must be a comma-separated list of host names/,
      );
    }
  });
});
