/**
 * The embedded chain in a thread of its own: a chain whose worker dies answers `unavailable` while
 * the rest of the service serves, then comes back with its saved state; and the chain port's
 * browser edge. The busy-port probes (heavy scans and PubSub fan-out beside the service's own
 * answers) are in local-chain-worker.slow.test.ts: they time the service's answers, so they run
 * with the machine to themselves.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, getBase58Decoder } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import { createChainClient } from "./support/chain-client.ts";
import { startServer } from "./support/start-server.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;

function randomAddress(): string {
  return getBase58Decoder().decode(randomBytes(32));
}

describe("a chain whose worker dies", () => {
  it("answers unavailable for chain calls while the rest serves, and comes back with its saved state", async () => {
    const dir = await mkdtemp(join(tmpdir(), "chain-worker-"));
    const statePath = join(dir, "chain.bin");
    // No retries: a chain call meets the dead worker, not the restarted one.
    const server = await startServer({ env: { LOCAL_SOLANA_STATE: statePath, SOLANA_RPC_MAX_RETRIES: "0" } });
    try {
      const local = server.localChain;
      if (local === undefined) throw new Error("no embedded chain");
      const url = local.url as string;
      const chain = createChainClient(url);
      const wallet = randomAddress();
      const before = (await stat(statePath)).mtimeMs;
      expect(await chain.raw("surfnet_setAccount", [wallet, { lamports: 1_234_567 }])).not.toHaveProperty(
        "error",
      );
      // The state is saved a moment after a change.
      const until = Date.now() + 10_000;
      while ((await stat(statePath)).mtimeMs === before && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const transactions = `${server.baseUrl}/v1/tokens/${USDC}/transactions`;
      expect((await fetch(transactions)).status).toBe(200);

      // The chain counts its requests on its thread; the counts reach the service's /metrics.
      await vi.waitFor(
        async () => {
          const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
          expect(text).toMatch(
            /local_chain_rpc_requests_total\{method="surfnet_setAccount",outcome="ok"\} [1-9]/,
          );
        },
        { timeout: 5000 },
      );

      await local.crash();
      expect(local.available).toBe(false);
      const down = await fetch(transactions);
      expect(down.status).toBe(503);
      expect(JSON.stringify(await down.json())).toMatch(/unavailable/);
      expect((await fetch(`${server.baseUrl}/v1/tokens/prices`)).status).toBe(200);
      expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);
      expect(server.logs.find((l) => String(l.msg).includes("worker stopped"))).toMatchObject({
        level: 50,
        err: { message: expect.stringContaining("told to crash") },
      });

      await local.ready();
      expect(local.url).toBe(url);
      expect((await chain.rpc.getBalance(wallet as Address).send()).value).toBe(1_234_567n);
      expect((await fetch(transactions)).status).toBe(200);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("the chain port's browser edge", () => {
  let local: RunningLocalChain;
  beforeAll(async () => {
    local = await startLocalChain({
      catalog: loadCatalog(),
      port: 0,
      statePath: undefined,
      slotMs: 400,
      // Only a listed origin is granted Private Network Access (cors.ts).
      allowedOrigins: ["https://dapp.example"],
    });
  });
  afterAll(() => local?.close());

  const preflight = (headers: Record<string, string>) =>
    fetch(local.url as string, {
      method: "OPTIONS",
      headers: {
        origin: "https://dapp.example",
        "access-control-request-method": "POST",
        ...headers,
      },
    });

  it("allows a listed public page to reach this machine only when its browser asks (Private Network Access)", async () => {
    const asked = await preflight({ "access-control-request-private-network": "true" });
    expect(asked.status).toBe(200);
    expect(asked.headers.get("access-control-allow-private-network")).toBe("true");
    expect(asked.headers.get("access-control-allow-origin")).toBe("https://dapp.example");
    const unasked = await preflight({});
    expect(unasked.status).toBe(200);
    expect(unasked.headers.get("access-control-allow-private-network")).toBeNull();
    const notTrue = await preflight({ "access-control-request-private-network": "false" });
    expect(notTrue.headers.get("access-control-allow-private-network")).toBeNull();
  });
});
