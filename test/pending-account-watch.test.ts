/**
 * Activation as the approval lands: the service watches its pending agents' token accounts on the
 * embedded chain's PubSub port (accountSubscribe) and checks an agent as soon as its account
 * changes. The scheduler polls every 60 s here, so a poll cannot be what activates an agent
 * within 10 s of its approval (on the memory store and on MongoDB, where the watch's checks are
 * claimed in the database); with the watch off (PENDING_WATCH_MAX_ACCOUNTS=0) the same agent
 * stays pending. Past the bound, the agents left unwatched are activated by the poll; with the
 * PubSub endpoint gone (a TCP relay in front of it, stopped), the poll still activates, and once
 * it is back the watch subscribes again and activates as the approval lands. Real service, real
 * chain, real sockets.
 */
import { createServer, type Server, Socket } from "node:net";
import { type Address, generateKeyPairSigner, type KeyPairSigner } from "@solana/kit";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import { type RunningLocalChain, startLocalChain } from "../src/local-chain/index.ts";
import { createPendingAccountWatch, fairShares } from "../src/scheduler/pending-account-watch.ts";
import { loadCatalog } from "../src/token/catalog.ts";
import {
  type AgentOnChain,
  agentStores,
  startAgentOnChain,
  stopAgentOnChain,
} from "./support/agent-on-chain.ts";
import { createChainClient } from "./support/chain-client.ts";
import { until } from "./support/transfer-owner.ts";

const USDC = loadCatalog().tokens.find((t) => t.symbol === "USDC")?.mint as Address;
/** The poll is this far apart: nothing a test waits for below may come from it. */
const LONG_POLL = { SCHEDULER_ENABLED: "true", SCHEDULER_POLL_INTERVAL_MS: "60000" };
/** Well before a poll 60 s away could come, with a wide margin for a loaded machine. */
const WITHIN_MS = 10_000;

/** A metric's value on the server's /metrics (0 when absent). */
async function metric(setup: AgentOnChain, name: string): Promise<number> {
  const text = await (await fetch(`${setup.server.baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

const statusOf = async (setup: AgentOnChain, agentId: string) =>
  (await setup.owners.ok("GET", `/v1/agents/${agentId}`)).status as string;

/** A transfer agent of `wallet`'s USDC, created over REST. */
async function createAgent(setup: AgentOnChain, wallet: KeyPairSigner): Promise<string> {
  const destination = (await generateKeyPairSigner()).address;
  return setup.owners.createTransfer({ source: wallet.address, destination, amount: 1, token: "USDC" });
}

/** A wallet of its own, with SOL for its approval's fee and USDC (so its token account exists). */
async function fundedWallet(setup: AgentOnChain): Promise<KeyPairSigner> {
  const wallet = await generateKeyPairSigner();
  await setup.chain.airdrop(wallet.address, 1n);
  await setup.chain.setTokenBalance(wallet.address, USDC, 100_000_000n);
  return wallet;
}

let setup: AgentOnChain | undefined;
let storeName = "memory";
afterEach(async () => {
  await stopAgentOnChain(storeName, setup?.server);
  setup = undefined;
  storeName = "memory";
});

describe("the watch of pending agents' token accounts", () => {
  it.each(agentStores("pending_watch"))(
    "activates an agent as its approval lands, long before the next poll (%s store)",
    async (store, storeEnv) => {
      storeName = store;
      setup = await startAgentOnChain({ ...LONG_POLL, ...storeEnv() }, [[USDC, 100_000_000n]]);
      const agentId = await createAgent(setup, setup.owner);
      // Its account is subscribed (the agent is known here from its creation, not from a poll).
      await until(
        async () =>
          (await metric(setup as AgentOnChain, "agent_pending_watch_accounts")) === 1 ? true : undefined,
        WITHIN_MS,
        "the agent's token account is watched",
      );
      expect(await statusOf(setup, agentId)).toBe("pending");
      await setup.owners.approve(agentId, 100, setup.owner);
      const landed = performance.now();
      await until(
        async () => ((await statusOf(setup as AgentOnChain, agentId)) === "active" ? true : undefined),
        WITHIN_MS,
        "the approved agent is active",
      );
      console.log(
        `${store}: active ${Math.round(performance.now() - landed)} ms after its approval was confirmed`,
      );
      expect(await metric(setup, "agent_pending_watch_notifications_total")).toBeGreaterThanOrEqual(1);
      // Active: no longer pending, no longer watched.
      await until(
        async () =>
          (await metric(setup as AgentOnChain, "agent_pending_watch_accounts")) === 0 ? true : undefined,
        WITHIN_MS,
        "the active agent's account is no longer watched",
      );
    },
    60_000,
  );

  it("leaves the agent pending until the next poll when the watch is off", async () => {
    setup = await startAgentOnChain({ ...LONG_POLL, PENDING_WATCH_MAX_ACCOUNTS: "0" }, [
      [USDC, 100_000_000n],
    ]);
    const agentId = await createAgent(setup, setup.owner);
    await setup.owners.approve(agentId, 100, setup.owner);
    await new Promise((resolve) => setTimeout(resolve, WITHIN_MS));
    expect(await statusOf(setup, agentId)).toBe("pending");
    expect(await metric(setup, "agent_pending_watch_accounts")).toBe(0);
  }, 60_000);

  it("subscribes on the embedded chain's own path while its clients hold the whole subscription cap", async () => {
    // A node cap of 4, a quarter each: four client addresses take all of it.
    setup = await startAgentOnChain({ ...LONG_POLL, LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS: "4" }, [
      [USDC, 100_000_000n],
    ]);
    const url = setup.server.localChain?.pubsub?.url as string;
    const clients: WebSocket[] = [];
    const subscribe = async (localAddress: string) => {
      const ws = new WebSocket(url, { localAddress });
      clients.push(ws);
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      const answer = new Promise<Record<string, unknown>>((resolve) =>
        ws.once("message", (data) => resolve(JSON.parse(String(data)))),
      );
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "slotSubscribe" }));
      return answer;
    };
    try {
      for (const address of ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"])
        expect(await subscribe(address)).toMatchObject({ result: expect.any(Number) });
      expect(await subscribe("127.0.0.5")).toMatchObject({
        error: { message: expect.stringContaining("Node subscription limit reached") },
      });
      const agentId = await createAgent(setup, setup.owner);
      await until(
        async () =>
          (await metric(setup as AgentOnChain, "agent_pending_watch_accounts")) === 1 ? true : undefined,
        WITHIN_MS,
        "the agent's token account is watched",
      );
      await setup.owners.approve(agentId, 100, setup.owner);
      await until(
        async () => ((await statusOf(setup as AgentOnChain, agentId)) === "active" ? true : undefined),
        WITHIN_MS,
        "the approved agent is active",
      );
      expect(await metric(setup, "agent_pending_watch_refused_total")).toBe(0);
    } finally {
      for (const ws of clients) ws.terminate();
    }
  }, 60_000);

  it("watches no more accounts than its bound; the poll activates the others", async () => {
    // The default poll (1 s): the unwatched agents are activated by it.
    setup = await startAgentOnChain({ SCHEDULER_ENABLED: "true", PENDING_WATCH_MAX_ACCOUNTS: "2" }, []);
    const wallets = await Promise.all(Array.from({ length: 5 }, () => fundedWallet(setup as AgentOnChain)));
    const agents: string[] = [];
    for (const wallet of wallets) agents.push(await createAgent(setup, wallet));
    await until(
      async () =>
        (await metric(setup as AgentOnChain, "agent_pending_watch_unwatched")) === 3 ? true : undefined,
      WITHIN_MS,
      "three agents past the bound are left to the poll",
    );
    expect(await metric(setup, "agent_pending_watch_accounts")).toBe(2);
    for (const [i, wallet] of wallets.entries()) {
      await setup.owners.approve(agents[i] as string, 100, wallet);
      // Never more subscriptions than the bound, whatever is pending.
      expect(await metric(setup, "agent_pending_watch_accounts")).toBeLessThanOrEqual(2);
    }
    for (const agentId of agents) {
      await until(
        async () => ((await statusOf(setup as AgentOnChain, agentId)) === "active" ? true : undefined),
        30_000,
        `agent ${agentId} is active`,
      );
    }
  }, 120_000);

  describe("with its PubSub endpoint going away and coming back", () => {
    /** A TCP relay in front of the chain's PubSub port, which the test stops and starts again. */
    let relay: Server | undefined;
    const sockets = new Set<Socket>();
    let target = 0;
    const startRelay = (port: number) =>
      new Promise<void>((resolve, reject) => {
        relay = createServer((client) => {
          const upstream = new Socket();
          upstream.connect(target, "127.0.0.1");
          for (const s of [client, upstream]) {
            sockets.add(s);
            s.on("close", () => sockets.delete(s));
            s.on("error", () => s.destroy());
          }
          client.pipe(upstream).pipe(client);
          client.on("close", () => upstream.destroy());
          upstream.on("close", () => client.destroy());
        });
        relay.once("error", reject);
        relay.listen(port, "127.0.0.1", () => resolve());
      });
    const stopRelay = async () => {
      const closed = new Promise((resolve) => relay?.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    };
    afterAll(async () => {
      if (relay?.listening) await stopRelay();
    });

    it("activates by the poll while it is down, and resubscribes once it is back", async () => {
      await startRelay(0);
      const { port: relayPort } = (relay as Server).address() as { port: number };
      const started = performance.now();
      setup = await startAgentOnChain({ ...LONG_POLL, SOLANA_WS_URL: `ws://127.0.0.1:${relayPort}` }, [
        [USDC, 100_000_000n],
      ]);
      const running = setup;
      target = Number(new URL(running.server.localChain?.pubsub?.url as string).port);
      const watched = (n: number) => async () =>
        (await metric(running, "agent_pending_watch_accounts")) === n ? true : undefined;

      // Two agents watched through the relay; the second is not approved until the end.
      const first = await createAgent(running, running.owner);
      const wallet = await fundedWallet(running);
      const second = await createAgent(running, wallet);
      await until(watched(2), WITHIN_MS, "both agents' accounts are watched through the relay");

      // The endpoint goes away: the watch loses its socket and retries in vain.
      await stopRelay();
      await until(
        async () =>
          (await metric(running, "agent_pending_watch_disconnections_total")) >= 2 ? true : undefined,
        WITHIN_MS,
        "the watch saw its socket close and a reconnection fail",
      );
      expect(await metric(running, "agent_pending_watch_connected")).toBe(0);
      expect(await metric(running, "agent_pending_watch_accounts")).toBe(0);
      await running.owners.approve(first, 100, running.owner);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await statusOf(running, first)).toBe("pending");
      // The poll (the scheduler's own, called now instead of in 60 s) activates it meanwhile.
      await running.server.scheduler?.tick();
      expect(await statusOf(running, first)).toBe("active");
      expect(await statusOf(running, second)).toBe("pending");

      // Back: the watch reconnects and subscribes the second agent's account again.
      await startRelay(relayPort);
      await until(
        async () =>
          (await metric(running, "agent_pending_watch_reconnections_total")) >= 1 ? true : undefined,
        40_000,
        "the watch reconnected",
      );
      await until(watched(1), WITHIN_MS, "the second agent's account is watched again");
      expect(await metric(running, "agent_pending_watch_connected")).toBe(1);
      await running.owners.approve(second, 100, wallet);
      await until(
        async () => ((await statusOf(running, second)) === "active" ? true : undefined),
        WITHIN_MS,
        "the second agent is active",
      );
      // The service's own poll (60 s after its first, at its start) cannot have done it.
      expect(performance.now() - started).toBeLessThan(60_000);
    }, 120_000);
  });
});

describe("createPendingAccountWatch on a local chain's PubSub port", () => {
  let local: RunningLocalChain | undefined;
  afterAll(async () => {
    await local?.close();
  });

  it("shares its bound fairly between owners, oldest first, follows the pending agents, and hears changes", async () => {
    local = await startLocalChain({ catalog: loadCatalog(), port: 0, statePath: undefined, slotMs: 100 });
    const chain = createChainClient(local.url as string);
    // Three owners: two with ten pending agents, one with two; each agent on an account of its own.
    const t0 = Date.now() - 60_000;
    const agentsOf = async (owner: string, count: number) =>
      Promise.all(
        Array.from({ length: count }, async (_, i) => ({
          agentId: `${owner}-${i}`,
          owner,
          createdAt: new Date(t0 + i * 1000),
          address: (await generateKeyPairSigner()).address,
        })),
      );
    const owners = { a: await agentsOf("a", 10), b: await agentsOf("b", 2), c: await agentsOf("c", 10) };
    let pending = [owners.a, owners.b, owners.c];
    const addressOf = new Map(
      Object.values(owners).flatMap((list) => list.map((x) => [x.agentId, x.address])),
    );
    /** Agents checked because their subscription was answered, and because their account changed. */
    const subscribedFor = new Set<string>();
    const changed: { agentIds: readonly string[]; cause: string }[] = [];
    let watched = 0;
    const watch = createPendingAccountWatch({
      url: local.pubsub?.url as string,
      maxAccounts: 6,
      commitment: "processed",
      pending: () => pending.map((list) => list.map((x) => x as unknown as AgentRecord)),
      accountOf: async (agent) => addressOf.get(agent.agentId),
      onChange: (agentIds, cause) => {
        if (cause.startsWith("w")) for (const id of agentIds) subscribedFor.add(id);
        else changed.push({ agentIds, cause });
      },
      events: { onWatched: (count) => (watched = count) },
    });
    try {
      watch.refresh();
      await until(async () => (watched === 6 ? true : undefined), 10_000, "six accounts watched");
      // Two each: b's both, and the two oldest of a and of c.
      expect([...subscribedFor].sort()).toEqual(["a-0", "a-1", "b-0", "b-1", "c-0", "c-1"]);

      // A change of a watched account is heard, named by its slot; an unwatched one's is not.
      await chain.airdrop(owners.a[9]?.address as Address, 1n);
      await chain.airdrop(owners.a[0]?.address as Address, 1n);
      await until(async () => (changed.length > 0 ? true : undefined), 10_000, "the change is heard");
      expect(changed.map((c) => c.agentIds)).toEqual([["a-0"]]);
      expect(changed[0]?.cause).toMatch(/^s\d+$/);

      // b's agents stop being pending: its share goes to the others, and its accounts are dropped.
      pending = [owners.a, owners.c];
      subscribedFor.clear();
      watch.refresh();
      await until(async () => (subscribedFor.size === 2 ? true : undefined), 10_000, "two more subscribed");
      expect([...subscribedFor].sort()).toEqual(["a-2", "c-2"]);
      expect(watched).toBe(6);
      changed.length = 0;
      await chain.airdrop(owners.b[0]?.address as Address, 1n);
      await chain.airdrop(owners.a[2]?.address as Address, 1n);
      await until(async () => (changed.length > 0 ? true : undefined), 10_000, "the change is heard");
      expect(changed.map((c) => c.agentIds)).toEqual([["a-2"]]);
    } finally {
      await watch.close();
    }
    expect(watch.watched).toBe(0);
  }, 60_000);
});

describe("fairShares", () => {
  it("gives each owner an equal share, and what one leaves to the others", () => {
    expect(fairShares([5, 5, 5], 10)).toEqual([3, 3, 4]);
    expect(fairShares([1000, 2, 1000], 10)).toEqual([4, 2, 4]);
    expect(fairShares([1, 2], 10)).toEqual([1, 2]);
    expect(fairShares([10_000, 3], 100)).toEqual([97, 3]);
    expect(fairShares([], 10)).toEqual([]);
  });
});
