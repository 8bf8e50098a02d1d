/**
 * Agent kinds as plugins: a kind the service has never seen, registered with one line, is taken
 * by CreateAgent with its own rules and errors, shown in PrepareApproval's terms, and run by the
 * scheduler, with no change to the scheduler, the store or the agent rules. The two built-in kinds
 * go through the same registry.
 */
import { describe, expect, it } from "vitest";
import { createAgentCommands } from "../src/agent/agent-commands.ts";
import { address, type KindConfigRules, positive, schedule, symbol } from "../src/agent/agent-config.ts";
import type { AgentRecord } from "../src/agent/agent-store.ts";
import type { Approvals } from "../src/agent/approvals.ts";
import { createMemoryAgentStore } from "../src/agent/memory-agent-store.ts";
import { InvalidArgumentError } from "../src/domain/errors.ts";
import type { AgentKind } from "../src/kinds/agent-kind.ts";
import { createAgentKinds } from "../src/kinds/agent-kinds.ts";
import { builtInKinds } from "../src/kinds/built-in-kinds.ts";
import { swapKind } from "../src/kinds/swap/swap-kind.ts";
import { transferKind } from "../src/kinds/transfer/transfer-kind.ts";
import { createMemoryRunStore } from "../src/scheduler/memory-run-store.ts";
import { createScheduleClock } from "../src/scheduler/schedule-clock.ts";
import { createScheduler } from "../src/scheduler/scheduler.ts";
import { createSimulatedExecutor } from "../src/scheduler/simulated-executor.ts";
import { catalogSymbolLookup, loadCatalog } from "../src/token/catalog.ts";
import { createCatalogPriceSource } from "../src/token/catalog-price-source.ts";
import { tickedSchedulerSettings } from "./support/scheduler-settings.ts";

const catalog = loadCatalog();
const lookup = catalogSymbolLookup(catalog);
const mintOf = (s: string) => catalog.tokens.find((t) => t.symbol === s)?.mint;
const WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const OWNER = "owner-1";

/** A kind that only exists here: it tips `amount` of `token` from `wallet` and says thanks. */
const TIP_SETTINGS: KindConfigRules = {
  settings: {
    wallet: address,
    token: symbol,
    amount: positive,
    schedule,
    thanks: async (v) => (v === undefined || typeof v === "string" ? undefined : "must be a string"),
  },
  optional: new Set(["thanks"]),
  crossField: async () => [],
  tokenFields: ["token"],
  refusedExtensions: {},
  amountToken: async (config) => (typeof config.token === "string" ? lookup(config.token) : undefined),
  normalise: async (config) => ({ ...config, token: (await lookup(config.token as string)) as string }),
};
const tipKind: AgentKind = {
  name: "tip",
  settings: TIP_SETTINGS,
  spending: (c) => ({ wallet: c.wallet as string, token: c.token as string, amount: c.amount as number }),
  receiving: (c) => ({ owner: c.wallet as string, symbol: c.token as string }),
  createExecutor: () => {
    throw new Error("not on a chain in this test");
  },
  simulate: async ({ config, signature }) => ({
    ok: true,
    result: { kind: "tip", amount: config.amount ?? null, signature },
  }),
  notice: () => "tips are simulated",
};

const approvals: Approvals = {
  feePayer: WALLET,
  required: false,
  delegateOf: () => WALLET,
  prepare: () => Promise.reject(new Error("not used")),
};

function commandsWith(kinds = createAgentKinds([transferKind, swapKind, tipKind])) {
  const store = createMemoryAgentStore();
  const runs = createMemoryRunStore();
  let n = 0;
  const commands = createAgentCommands({
    kinds,
    store,
    runs,
    approvals,
    lookupSymbol: async (s) => lookup(s),
    lookupDecimals: async (s) => catalog.tokens.find((t) => t.symbol === s)?.decimals,
    clock: createScheduleClock({ scale: 1 }),
    newId: () => `tip-agent-${++n}`.padEnd(22, "x"),
  });
  return { commands, store, runs, kinds };
}

describe("agent kinds", () => {
  it("the registry refuses two kinds of one name, and names the built-in kinds in registry order", () => {
    expect(() => createAgentKinds([transferKind, transferKind])).toThrow(
      /two agent kinds are named transfer/,
    );
    expect(builtInKinds().names).toEqual(["transfer", "swap"]);
    expect(() => builtInKinds().of({ type: "tip" })).toThrow(/no agent kind is named tip/);
  });

  it("a kind added to the registry is created with its own rules and errors, and the type's error lists it", async () => {
    const { commands } = commandsWith();
    const agent = await commands.create(OWNER, {
      type: "tip",
      config: { wallet: WALLET, token: "usdc", amount: 0.5, schedule: "hourly" },
      idempotencyKey: "",
    });
    expect(agent).toMatchObject({ type: "tip", config: { token: "USDC", amount: 0.5 } });
    expect(commands.notice?.(agent)).toBe("tips are simulated");

    const bad = await commands
      .create(OWNER, { type: "tip", config: { wallet: "nope", amount: 0.5, extra: 1 }, idempotencyKey: "" })
      .catch((error: unknown) => error);
    expect(bad).toBeInstanceOf(InvalidArgumentError);
    const fields = (bad as InvalidArgumentError).violations.map((v) => `${v.field}: ${v.description}`);
    expect(fields).toEqual([
      'config.extra: is not a tip agent setting (use "wallet" or "token" or "amount" or "schedule" or "thanks")',
      expect.stringMatching(/^config\.wallet: /),
      "config.token: is required",
      "config.schedule: is required",
    ]);

    const unknown = await commands
      .create(OWNER, { type: "tipp", config: {}, idempotencyKey: "" })
      .catch((error: unknown) => error);
    expect((unknown as InvalidArgumentError).violations[0]?.description).toMatch(
      /"transfer" or "swap" or "tip"/,
    );
  });

  it("without its line in the registry the same request is refused, naming the kinds there are", async () => {
    const { commands } = commandsWith(builtInKinds());
    const refused = await commands
      .create(OWNER, {
        type: "tip",
        config: { wallet: WALLET, token: "USDC", amount: 1, schedule: "hourly" },
        idempotencyKey: "",
      })
      .catch((error: unknown) => error);
    expect((refused as InvalidArgumentError).violations).toEqual([
      { field: "type", description: 'must be one of "transfer" or "swap" but is "tip"' },
    ]);
  });

  it("the scheduler runs it through the registry, unchanged: its result is the kind's own", async () => {
    const { commands, store, runs, kinds } = commandsWith();
    const created = await commands.create(OWNER, {
      type: "tip",
      config: { wallet: WALLET, token: "USDC", amount: 2, schedule: "hourly" },
      idempotencyKey: "",
    });
    let now = new Date(created.createdAt.getTime() + 1_000);
    const scheduler = createScheduler({
      agents: store,
      runs,
      executor: createSimulatedExecutor({ kinds, tokens: createCatalogPriceSource({ catalog }), mintOf }),
      clock: createScheduleClock({ scale: 1 }),
      checkRunnable: async () => undefined,
      worker: "kinds-test",
      ...tickedSchedulerSettings(),
      now: () => now,
    });
    await scheduler.tick();
    expect(await store.get(OWNER, created.agentId)).toMatchObject({ status: "active" });
    now = new Date(((await store.get(OWNER, created.agentId)) as AgentRecord).nextRunAt?.getTime() ?? 0);
    now = new Date(now.getTime() + 1_000);
    await scheduler.tick();
    await scheduler.idle();
    const { runs: history } = await runs.list(OWNER, created.agentId, { limit: 10, offset: 0 });
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ outcome: "succeeded", result: { kind: "tip", amount: 2 } });
  });
});
