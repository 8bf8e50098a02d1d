/**
 * A swap agent that cannot run says so before it fails: with JUPITER_SWAP_URL naming a Swap API
 * nothing answers at (a closed port on this machine), the service's probe finds it out, and
 * CreateAgent and GetAgent's notice name JUPITER_SWAP_URL and the URL's origin; a run's failure
 * caused by the Swap API names them too. With JUPITER_SWAP_URL naming one that answers, the notice
 * says where routes come from.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJupiterSwapApi } from "../src/token/jupiter-swap-api.ts";
import { jupiterRouteNotice } from "../src/token/swap-route-notice.ts";
import { freePort } from "./support/ports.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";
import { until } from "./support/transfer-owner.ts";

const WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const ADDRESS = "So11111111111111111111111111111111111111112";

describe("a Swap API that cannot be reached", () => {
  let server: RunningServer;
  let origin: string;

  beforeAll(async () => {
    origin = `http://127.0.0.1:${await freePort()}`;
    server = await startServer({ env: { JUPITER_SWAP_URL: `${origin}/swap/v2` } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("CreateAgent and GetAgent's notice name JUPITER_SWAP_URL and its origin", async () => {
    const post = async () => {
      const response = await fetch(`${server.baseUrl}/v1/agents`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          type: "swap",
          config: { wallet: WALLET, inputToken: "USDC", outputToken: "JUP", amount: 1, schedule: "daily" },
        }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { data: { agentId: string; notice?: string } };
    };
    const created = await until(
      async () => {
        const { data } = await post();
        return data.notice?.startsWith("no Swap API") === true ? data : undefined;
      },
      10_000,
      "the probe finds the Swap API unreachable",
    );
    expect(created.notice).toContain(`no Swap API can be reached at ${origin} (JUPITER_SWAP_URL)`);
    const got = (await (await fetch(`${server.baseUrl}/v1/agents/${created.agentId}`)).json()) as {
      data: { notice: string; pendingReason: string };
    };
    expect(got.data.notice).toBe(created.notice);
  });

  it("the service's executor bounds swap runs by the Swap API's builds at once (8 + 64 by default), transfers by none", () => {
    const agent = { agentId: "a", owner: "o", config: {} };
    // What the scheduler runs at most of at once, out of its count while they wait for routes.
    expect(server.context.executor.upstreamOf?.({ ...agent, type: "swap" })).toEqual({
      name: "swap_api",
      calls: 8 + 64,
    });
    expect(server.context.executor.upstreamOf?.({ ...agent, type: "transfer" })).toBeUndefined();
  });

  it("a build's failure names JUPITER_SWAP_URL and the URL's origin, never its path or key", async () => {
    const routes = jupiterRouteNotice(
      createJupiterSwapApi({
        baseUrl: `${origin}/swap/v2`,
        apiKey: "secret-key",
        timeoutMs: 2000,
        maxBytes: 65536,
      }),
      `${origin}/swap/v2`,
    );
    expect(routes.notice()).toBe(`swap routes come from the Swap API at ${origin} (JUPITER_SWAP_URL)`);
    // The Swap API client's bound reaches the executor through the notice (Executor.upstreamOf).
    expect(routes.api.maxCalls).toBe(4 + 16);
    const failure = await routes.api
      .build({
        inputMint: ADDRESS,
        outputMint: ADDRESS,
        amount: 1n,
        taker: WALLET,
        payer: WALLET,
        destinationTokenAccount: WALLET,
        slippageBps: 50,
      })
      .catch((error: Error) => error);
    expect((failure as Error).message).toBe(
      `Jupiter's Swap API cannot be reached (JUPITER_SWAP_URL is ${origin}; set it to a Swap API this service can reach)`,
    );
    expect((failure as Error).message).not.toContain("secret-key");
    expect(routes.notice()).toMatch(/^no Swap API can be reached at .* until JUPITER_SWAP_URL names/);
  });
});

describe("a Swap API that answers", () => {
  it("the probe leaves the notice saying where routes come from", async () => {
    const http = createServer((_req, res) => res.writeHead(404).end());
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    const routes = jupiterRouteNotice(
      createJupiterSwapApi({ baseUrl: `${url}/swap/v2`, timeoutMs: 2000, maxBytes: 65536 }),
      `${url}/swap/v2`,
    );
    await routes.probe();
    expect(routes.notice()).toBe(`swap routes come from the Swap API at ${url} (JUPITER_SWAP_URL)`);
    await new Promise((resolve) => http.close(resolve));
  });
});
