/**
 * The agent contract through the real server, case by case, over every protocol (Connect JSON and
 * binary, gRPC and gRPC-Web through connect-node, and grpc-js as an independent gRPC client), and
 * all of it twice: on the in-memory store and on MongoDB (the global setup's server; never
 * skipped). Expected values are computed here (schedules, order, catalog spelling), not taken
 * from the service's code.
 *
 * Every caller is the principal "anonymous", so each suite gets its own server and database.
 */
import { randomBytes } from "node:crypto";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import type { AppContextOverrides } from "../src/app-context.ts";
import { createProtocols, type Outcome, type Protocol, withStructConfig } from "./support/callers.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

// --- fixtures ---------------------------------------------------------------------------------

/** Valid base58 32-byte addresses (catalog mints and the system program). */
const ADDR_A = "So11111111111111111111111111111111111111112";
const ADDR_B = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const ADDR_C = "11111111111111111111111111111111";
/** Base58, but 30 characters of a 44-character address: not 32 bytes. */
const SHORT_ADDR = ADDR_B.slice(0, 30);

type Json = Record<string, unknown>;
type Method = "CreateAgent" | "GetAgent" | "DeleteAgent" | "ListAgents";
type Schedule = "hourly" | "daily" | "weekly" | "monthly";

const transfer = (over: Json = {}): Json => ({
  source: ADDR_A,
  destination: ADDR_B,
  amount: 1.5,
  token: "usdc",
  schedule: "daily",
  ...over,
});
const swap = (over: Json = {}): Json => ({
  wallet: ADDR_C,
  inputToken: "sol",
  outputToken: "UsDc",
  amount: 2,
  schedule: "weekly",
  ...over,
});
/** The config without `key`. */
const without = (config: Json, key: string): Json =>
  Object.fromEntries(Object.entries(config).filter(([k]) => k !== key));
/** The config plus an own property `key`, whatever the key (even "__proto__"). */
const withOwn = (config: Json, key: string, value: unknown): Json => {
  const copy = { ...config };
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
};

const HOUR_MS = 3_600_000;

/** One period of `schedule` after `from`, in UTC; a month is a calendar month, clamped to its end. */
function expectedNextRun(from: Date, schedule: Schedule): Date {
  switch (schedule) {
    case "hourly":
      return new Date(from.getTime() + HOUR_MS);
    case "daily":
      return new Date(from.getTime() + 24 * HOUR_MS);
    case "weekly":
      return new Date(from.getTime() + 7 * 24 * HOUR_MS);
    case "monthly": {
      const year = from.getUTCFullYear();
      const month = from.getUTCMonth() + 1; // may be 12: Date.UTC rolls it into January
      const daysInTarget = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
      return new Date(
        Date.UTC(
          year,
          month,
          Math.min(from.getUTCDate(), daysInTarget),
          from.getUTCHours(),
          from.getUTCMinutes(),
          from.getUTCSeconds(),
          from.getUTCMilliseconds(),
        ),
      );
    }
  }
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6}|\.\d{9})?Z$/;
const AGENT_ID = /^[A-Za-z0-9_-]{22,}$/;

// --- calling ----------------------------------------------------------------------------------

type Call = (method: Method, request: Json, headers?: Record<string, string>) => Promise<Outcome>;

/**
 * The protocol's caller for AgentService. grpc-js (proto-loader) takes google.protobuf.Struct in
 * its message form, so `config` is converted for it; the Connect clients take the JSON object.
 *
 * Messages are compared as each client shows them, grpc-js included: the service words them so
 * that grpc-js's decodeURI of connect-node's encodeURIComponent leaves no escapes behind.
 */
function agentCaller(protocol: Protocol): Call {
  const caller = withStructConfig(protocol);
  return (method, request, headers) => caller.call(AgentService, method, request, headers);
}

/** The response's `data`, failing the test with the error when the call failed. */
function dataOf(outcome: Outcome): Record<string, JsonValue> {
  if (!outcome.ok) {
    throw new Error(`expected success, got code ${outcome.code}: ${outcome.message}`);
  }
  expect(outcome.json.success).toBe(true);
  return outcome.json.data as Record<string, JsonValue>;
}

interface Created {
  agentId: string;
  status: string;
  createdAt: string;
}
interface Detail {
  agentId: string;
  type: string;
  status: string;
  config: Json;
  createdAt: string;
  lastRunAt?: string;
  nextRunAt: string;
}
interface Summary {
  agentId: string;
  type: string;
  status: string;
  createdAt: string;
}
interface Page {
  agents: Summary[];
  total: number;
  limit: number;
  offset: number;
}

async function createOk(call: Call, type: string, config: Json, headers?: Record<string, string>) {
  const data = dataOf(await call("CreateAgent", { type, config }, headers)) as unknown as Created;
  // A swap agent's answer also says where its routes come from (notice).
  expect(Object.keys(data).sort()).toEqual(
    type === "swap" ? ["agentId", "createdAt", "notice", "status"] : ["agentId", "createdAt", "status"],
  );
  return data;
}

async function listOk(call: Call, request: Json = {}): Promise<Page> {
  return dataOf(await call("ListAgents", request)) as unknown as Page;
}

// --- expectations -----------------------------------------------------------------------------

/** invalid_argument with exactly these violations, in this order, each named in the message. */
const invalid =
  (...fields: { field: string; mentions: string }[]) =>
  (o: Outcome) => {
    if (o.ok) throw new Error(`expected invalid_argument, got ${JSON.stringify(o.json)}`);
    expect(o.code).toBe(Code.InvalidArgument);
    expect(o.violations.map((v) => v.field)).toEqual(fields.map((f) => f.field));
    fields.forEach((f, i) => {
      expect(o.violations[i]?.description).toContain(f.mentions);
      expect(o.message).toContain(`${f.field} `);
      // Plain text on every client: nothing left percent-encoded (grpc-js decodes with decodeURI).
      expect(o.message).not.toMatch(/%[0-9A-Fa-f]{2}/);
      expect(o.message).toContain(f.mentions);
    });
  };
const v = (field: string, mentions: string) => ({ field, mentions });

const failsWith = (code: Code) => (o: Outcome) => {
  if (o.ok) throw new Error(`expected code ${code}, got ${JSON.stringify(o.json)}`);
  expect(o.code).toBe(code);
  expect(o.violations).toEqual([]);
};

// Rule phrases the messages must carry.
const REQUIRED = "is required";
const ADDRESS = "32-byte";
const POSITIVE = "greater than 0";
const CATALOG = "catalog";
const SCHEDULE = '"hourly" or "daily" or "weekly" or "monthly"';
const SLIPPAGE = "integer from 1 to 5000";
const LIMIT = "must be an integer from 1 to 100 (0 or omitted means 10)";

// --- the case table ---------------------------------------------------------------------------

interface ValidCase {
  name: string;
  type: "transfer" | "swap";
  config: Json;
  /** The config GetAgent must return: defaults applied, catalog spelling of symbols. */
  stored: Json;
  schedule: Schedule;
}

const validCases: ValidCase[] = [
  {
    name: "transfer, hourly, symbol in lower case",
    type: "transfer",
    config: transfer({ schedule: "hourly" }),
    stored: transfer({ schedule: "hourly", token: "USDC" }),
    schedule: "hourly",
  },
  {
    name: "transfer, daily, mixed-case catalog symbol",
    type: "transfer",
    config: transfer({ token: "msol", amount: 0.000001 }),
    stored: transfer({ token: "mSOL", amount: 0.000001 }),
    schedule: "daily",
  },
  {
    name: "transfer, weekly",
    type: "transfer",
    config: transfer({ token: "JITOSOL", schedule: "weekly", amount: 250 }),
    stored: transfer({ token: "JitoSOL", schedule: "weekly", amount: 250 }),
    schedule: "weekly",
  },
  {
    name: "transfer, monthly",
    type: "transfer",
    config: transfer({ token: "SOL", schedule: "monthly" }),
    stored: transfer({ token: "SOL", schedule: "monthly" }),
    schedule: "monthly",
  },
  {
    name: "swap, slippageBps defaults to 50",
    type: "swap",
    config: swap(),
    stored: swap({ inputToken: "SOL", outputToken: "USDC", slippageBps: 50 }),
    schedule: "weekly",
  },
  {
    name: "swap, slippageBps 1 (lowest), hourly",
    type: "swap",
    config: swap({ slippageBps: 1, schedule: "hourly", inputToken: "bonk" }),
    stored: swap({ slippageBps: 1, schedule: "hourly", inputToken: "BONK", outputToken: "USDC" }),
    schedule: "hourly",
  },
  {
    name: "swap, slippageBps 5000 (highest), monthly",
    type: "swap",
    config: swap({ slippageBps: 5000, schedule: "monthly" }),
    stored: swap({ slippageBps: 5000, schedule: "monthly", inputToken: "SOL", outputToken: "USDC" }),
    schedule: "monthly",
  },
  {
    name: "swap, with a price band (output per input, whole tokens)",
    type: "swap",
    config: swap({ minPrice: 150, maxPrice: 250.5 }),
    stored: swap({ inputToken: "SOL", outputToken: "USDC", slippageBps: 50, minPrice: 150, maxPrice: 250.5 }),
    schedule: "weekly",
  },
  {
    name: "swap, a band of one price",
    type: "swap",
    config: swap({ minPrice: 0.004, maxPrice: 0.004 }),
    stored: swap({
      inputToken: "SOL",
      outputToken: "USDC",
      slippageBps: 50,
      minPrice: 0.004,
      maxPrice: 0.004,
    }),
    schedule: "weekly",
  },
  {
    name: "swap, daily",
    type: "swap",
    config: swap({ schedule: "daily", amount: 0.5 }),
    stored: swap({ schedule: "daily", amount: 0.5, inputToken: "SOL", outputToken: "USDC", slippageBps: 50 }),
    schedule: "daily",
  },
];

interface Case {
  name: string;
  method: Method;
  request: Json;
  headers?: Record<string, string>;
  /** Only for protocols that encode binary: JSON cannot carry the value. */
  binaryOnly?: boolean;
  expect: (outcome: Outcome) => void;
}

const TRANSFER_KEYS = ["source", "destination", "amount", "token", "schedule"];
const SWAP_KEYS = ["wallet", "inputToken", "outputToken", "amount", "schedule"];
const create = (type: string, config: Json | undefined): Json =>
  config === undefined ? { type } : { type, config };

const cases: Case[] = [
  // CreateAgent: type and config
  {
    name: "create: missing type",
    method: "CreateAgent",
    request: { config: transfer() },
    expect: invalid(v("type", REQUIRED)),
  },
  {
    name: "create: unknown type",
    method: "CreateAgent",
    request: create("stake", transfer()),
    expect: invalid(v("type", 'must be one of "transfer" or "swap"')),
  },
  {
    name: "create: type is case-sensitive",
    method: "CreateAgent",
    request: create("Transfer", transfer()),
    expect: invalid(v("type", 'must be one of "transfer" or "swap"')),
  },
  {
    name: "create: missing config",
    method: "CreateAgent",
    request: { type: "transfer" },
    expect: invalid(v("config", REQUIRED)),
  },
  {
    name: "create: missing type and config",
    method: "CreateAgent",
    request: {},
    expect: invalid(v("type", REQUIRED), v("config", REQUIRED)),
  },
  {
    name: "create: empty transfer config names every setting",
    method: "CreateAgent",
    request: create("transfer", {}),
    expect: invalid(...TRANSFER_KEYS.map((k) => v(`config.${k}`, REQUIRED))),
  },
  ...TRANSFER_KEYS.map(
    (key): Case => ({
      name: `create: transfer without ${key}`,
      method: "CreateAgent",
      request: create("transfer", without(transfer(), key)),
      expect: invalid(v(`config.${key}`, REQUIRED)),
    }),
  ),
  ...SWAP_KEYS.map(
    (key): Case => ({
      name: `create: swap without ${key}`,
      method: "CreateAgent",
      request: create("swap", without(swap(), key)),
      expect: invalid(v(`config.${key}`, REQUIRED)),
    }),
  ),
  {
    name: "create: unknown key in a transfer",
    method: "CreateAgent",
    request: create("transfer", transfer({ memo: "rent" })),
    expect: invalid(v("config.memo", "is not a transfer agent setting")),
  },
  {
    name: "create: a swap setting in a transfer",
    method: "CreateAgent",
    request: create("transfer", transfer({ slippageBps: 50 })),
    expect: invalid(v("config.slippageBps", "is not a transfer agent setting")),
  },
  {
    name: "create: a transfer setting in a swap",
    method: "CreateAgent",
    request: create("swap", swap({ token: "USDC" })),
    expect: invalid(v("config.token", "is not a swap agent setting")),
  },
  ...["constructor", "toString", "hasOwnProperty", "__proto__"].map(
    (key): Case => ({
      name: `create: "${key}" is an unknown key too`,
      method: "CreateAgent",
      request: create("transfer", withOwn(transfer(), key, 1)),
      expect: invalid(v(`config.${key}`, "is not a transfer agent setting")),
    }),
  ),
  // price bands
  ...([0, -3, "150", true] as const).map(
    (minPrice): Case => ({
      name: `create: swap minPrice ${JSON.stringify(minPrice)}`,
      method: "CreateAgent",
      request: create("swap", swap({ minPrice })),
      expect: invalid(
        v(
          "config.minPrice",
          "must be a positive decimal number giving the price of the output token in units",
        ),
      ),
    }),
  ),
  {
    name: "create: swap maxPrice below minPrice",
    method: "CreateAgent",
    request: create("swap", swap({ minPrice: 200, maxPrice: 199.99 })),
    expect: invalid(v("config.maxPrice", "must be at least config.minPrice")),
  },
  {
    name: "create: a price band in a transfer",
    method: "CreateAgent",
    request: create("transfer", transfer({ maxPrice: 5 })),
    expect: invalid(v("config.maxPrice", "is not a transfer agent setting")),
  },
  // addresses
  {
    name: "create: source with characters outside base58",
    method: "CreateAgent",
    request: create("transfer", transfer({ source: "0OIl-not-an-address" })),
    expect: invalid(v("config.source", ADDRESS)),
  },
  {
    name: "create: destination of the wrong size",
    method: "CreateAgent",
    request: create("transfer", transfer({ destination: SHORT_ADDR })),
    expect: invalid(v("config.destination", ADDRESS)),
  },
  {
    name: "create: empty source",
    method: "CreateAgent",
    request: create("transfer", transfer({ source: "" })),
    expect: invalid(v("config.source", ADDRESS)),
  },
  {
    name: "create: wallet that is a number",
    method: "CreateAgent",
    request: create("swap", swap({ wallet: 12345 })),
    expect: invalid(v("config.wallet", ADDRESS)),
  },
  {
    name: "create: wallet of the wrong size",
    method: "CreateAgent",
    request: create("swap", swap({ wallet: SHORT_ADDR })),
    expect: invalid(v("config.wallet", ADDRESS)),
  },
  {
    name: "create: source equal to destination",
    method: "CreateAgent",
    request: create("transfer", transfer({ destination: ADDR_A })),
    expect: invalid(v("config.destination", "must differ from config.source")),
  },
  {
    name: "create: equal but invalid source and destination get one violation each",
    method: "CreateAgent",
    request: create("transfer", transfer({ source: "x", destination: "x" })),
    expect: invalid(v("config.source", ADDRESS), v("config.destination", ADDRESS)),
  },
  // amount
  ...[0, -1, -0.5].map(
    (amount): Case => ({
      name: `create: transfer amount ${amount}`,
      method: "CreateAgent",
      request: create("transfer", transfer({ amount })),
      expect: invalid(v("config.amount", POSITIVE)),
    }),
  ),
  ...(["1", true, null] as const).map(
    (amount): Case => ({
      name: `create: swap amount ${JSON.stringify(amount)} (not a number)`,
      method: "CreateAgent",
      request: create("swap", swap({ amount })),
      // A quoted number is told apart: it needs quotes removed, not another value.
      expect: invalid(
        v("config.amount", typeof amount === "string" ? "must be a JSON number such as 1.5" : POSITIVE),
      ),
    }),
  ),
  ...[Number.POSITIVE_INFINITY, Number.NaN].map(
    (amount): Case => ({
      name: `create: amount ${amount} (binary encodings only)`,
      method: "CreateAgent",
      request: create("transfer", transfer({ amount })),
      binaryOnly: true,
      expect: invalid(v("config.amount", "finite")),
    }),
  ),
  // tokens
  {
    name: "create: unknown token symbol",
    method: "CreateAgent",
    request: create("transfer", transfer({ token: "NOPE" })),
    expect: invalid(v("config.token", CATALOG)),
  },
  {
    name: "create: token that is a number",
    method: "CreateAgent",
    request: create("transfer", transfer({ token: 5 })),
    expect: invalid(v("config.token", CATALOG)),
  },
  {
    name: "create: token given by mint, not symbol",
    method: "CreateAgent",
    request: create("transfer", transfer({ token: ADDR_B })),
    expect: invalid(v("config.token", CATALOG)),
  },
  {
    name: "create: unknown input token",
    method: "CreateAgent",
    request: create("swap", swap({ inputToken: "DOGE" })),
    expect: invalid(v("config.inputToken", CATALOG)),
  },
  {
    name: "create: unknown output token",
    method: "CreateAgent",
    request: create("swap", swap({ outputToken: "" })),
    expect: invalid(v("config.outputToken", CATALOG)),
  },
  {
    name: "create: equal input and output tokens",
    method: "CreateAgent",
    request: create("swap", swap({ inputToken: "USDC", outputToken: "USDC" })),
    expect: invalid(v("config.outputToken", "must differ from config.inputToken")),
  },
  {
    name: "create: input and output tokens equal but for case",
    method: "CreateAgent",
    request: create("swap", swap({ inputToken: "usdc", outputToken: "USDC" })),
    expect: invalid(v("config.outputToken", "must differ from config.inputToken")),
  },
  // slippage
  ...([0, 5001, 1.5, -1, "50"] as const).map(
    (slippageBps): Case => ({
      name: `create: slippageBps ${JSON.stringify(slippageBps)}`,
      method: "CreateAgent",
      request: create("swap", swap({ slippageBps })),
      expect: invalid(v("config.slippageBps", SLIPPAGE)),
    }),
  ),
  // schedule
  ...(["yearly", "Daily", "", 24] as const).map(
    (schedule): Case => ({
      name: `create: schedule ${JSON.stringify(schedule)}`,
      method: "CreateAgent",
      request: create("transfer", transfer({ schedule })),
      expect: invalid(v("config.schedule", SCHEDULE)),
    }),
  ),
  // several at once
  {
    name: "create: every bad transfer field at once, one violation each",
    method: "CreateAgent",
    request: create(
      "transfer",
      transfer({ extra: 1, source: "bad", amount: 0, token: "NOPE", schedule: "yearly" }),
    ),
    expect: invalid(
      v("config.extra", "is not a transfer agent setting"),
      v("config.source", ADDRESS),
      v("config.amount", POSITIVE),
      v("config.token", CATALOG),
      v("config.schedule", SCHEDULE),
    ),
  },
  {
    name: "create: every bad swap field at once, the cross-field rule included",
    method: "CreateAgent",
    request: create(
      "swap",
      swap({ wallet: "x", inputToken: "usdc", outputToken: "USDC", amount: -5, slippageBps: 0 }),
    ),
    expect: invalid(
      v("config.wallet", ADDRESS),
      v("config.amount", POSITIVE),
      v("config.slippageBps", SLIPPAGE),
      v("config.outputToken", "must differ from config.inputToken"),
    ),
  },
  {
    name: "create: source equal to destination among other bad fields",
    method: "CreateAgent",
    request: create("transfer", transfer({ destination: ADDR_A, amount: -1 })),
    expect: invalid(v("config.amount", POSITIVE), v("config.destination", "must differ")),
  },
  {
    name: "create: overlong idempotency key",
    method: "CreateAgent",
    request: create("transfer", transfer()),
    headers: { "idempotency-key": "k".repeat(256) },
    expect: invalid(v("idempotency-key", "at most 255")),
  },
  // GetAgent
  {
    name: "get: unknown id",
    method: "GetAgent",
    request: { agentId: randomBytes(16).toString("base64url") },
    expect: failsWith(Code.NotFound),
  },
  {
    name: "get: id that looks like a query operator",
    method: "GetAgent",
    request: { agentId: '{"$ne":null}' },
    expect: failsWith(Code.NotFound),
  },
  { name: "get: empty id", method: "GetAgent", request: {}, expect: invalid(v("agentId", REQUIRED)) },
  {
    name: "get: overlong id",
    method: "GetAgent",
    request: { agentId: "a".repeat(200) },
    expect: invalid(v("agentId", "at most 128")),
  },
  // DeleteAgent
  {
    name: "delete: unknown id answers deleted: false",
    method: "DeleteAgent",
    request: { agentId: randomBytes(16).toString("base64url") },
    expect: (o) => expect(o).toEqual({ ok: true, json: { success: true, data: { deleted: false } } }),
  },
  { name: "delete: empty id", method: "DeleteAgent", request: {}, expect: invalid(v("agentId", REQUIRED)) },
  // ListAgents
  ...(
    [
      [{}, 10, 0],
      [{ limit: 0 }, 10, 0],
      [{ limit: 1 }, 1, 0],
      [{ limit: 100 }, 100, 0],
      [{ offset: 0 }, 10, 0],
      [{ limit: 3, offset: 5 }, 3, 5],
      [{ offset: 1_000_000 }, 10, 1_000_000],
      [{ type: "swap", status: "paused" }, 10, 0],
    ] as const
  ).map(
    ([request, limit, offset]): Case => ({
      name: `list: ${JSON.stringify(request)} applies limit ${limit} and offset ${offset}`,
      method: "ListAgents",
      request,
      expect: (o) => {
        const page = dataOf(o) as unknown as Page;
        expect(Object.keys(page).sort()).toEqual(["agents", "limit", "offset", "total"]);
        expect(page.limit).toBe(limit);
        expect(page.offset).toBe(offset);
        expect(page.agents.length).toBeLessThanOrEqual(limit);
        expect(page.agents.length).toBe(Math.max(0, Math.min(limit, page.total - offset)));
      },
    }),
  ),
  {
    name: "list: limit 101",
    method: "ListAgents",
    request: { limit: 101 },
    expect: invalid(v("limit", LIMIT)),
  },
  {
    name: "list: limit -1",
    method: "ListAgents",
    request: { limit: -1 },
    expect: invalid(v("limit", LIMIT)),
  },
  {
    name: "list: offset -1",
    method: "ListAgents",
    request: { offset: -1 },
    expect: invalid(v("offset", "0 or greater")),
  },
  {
    name: "list: unknown type",
    method: "ListAgents",
    request: { type: "stake" },
    expect: invalid(v("type", 'must be one of "transfer" or "swap"')),
  },
  {
    name: "list: unknown status",
    method: "ListAgents",
    request: { status: "done" },
    expect: invalid(v("status", 'must be one of "pending" or "active" or "paused"')),
  },
  {
    name: "list: every bad field at once",
    method: "ListAgents",
    request: { type: "x", status: "y", limit: 500, offset: -2 },
    expect: invalid(
      v("type", "must be one of"),
      v("status", "must be one of"),
      v("limit", LIMIT),
      v("offset", "0 or greater"),
    ),
  },
];

// --- the stores -------------------------------------------------------------------------------

const mongoUri = inject("mongoUri");
const runId = `${process.pid}_${Date.now()}_${randomBytes(2).toString("hex")}`;
let databases = 0;

interface Suite {
  readonly server: RunningServer;
  readonly protocols: Protocol[];
  close(): Promise<void>;
}

interface StoreKind {
  readonly name: string;
  readonly kind: "memory" | "mongodb";
  start(overrides?: AppContextOverrides): Promise<Suite>;
}

async function startSuite(env: Record<string, string>, overrides?: AppContextOverrides): Promise<Suite> {
  const server = await startServer({ env, ...(overrides === undefined ? {} : { overrides }) });
  const protocols = createProtocols(server.baseUrl);
  return {
    server,
    protocols,
    async close() {
      for (const p of protocols) p.close();
      await server.close();
    },
  };
}

const STORES: StoreKind[] = [
  { name: "in-memory store", kind: "memory", start: (overrides) => startSuite({}, overrides) },
  {
    name: "MongoDB store",
    kind: "mongodb",
    async start(overrides) {
      // A database of its own per suite, dropped afterwards with a client of our own.
      const dbName = `agents_${runId}_${++databases}`;
      const suite = await startSuite({ MONGODB_URI: mongoUri, MONGODB_DB: dbName }, overrides);
      return {
        ...suite,
        async close() {
          await suite.close();
          const client = new MongoClient(mongoUri);
          try {
            await client.db(dbName).dropDatabase();
          } finally {
            await client.close();
          }
        },
      };
    },
  },
];

const PROTOCOL_NAMES = createProtocols("http://127.0.0.1:1").map((p) => p.name);
const isJsonProtocol = (name: string) => name.startsWith("connect+json");

function protocolNamed(suite: Suite, name: string): Protocol {
  const p = suite.protocols.find((x) => x.name === name);
  if (p === undefined) throw new Error(name);
  return p;
}

/** A movable clock for the server's `now`. */
function movableClock(start: Date) {
  let current = start;
  return {
    now: () => new Date(current.getTime()),
    set(d: Date) {
      current = d;
    },
  };
}

/** createdAt descending, then agentId descending by code unit (MongoDB's binary string order). */
function newestFirst(a: Summary, b: Summary): number {
  const byTime = Date.parse(b.createdAt) - Date.parse(a.createdAt);
  if (byTime !== 0) return byTime;
  return a.agentId < b.agentId ? 1 : a.agentId > b.agentId ? -1 : 0;
}

async function inBatches<T>(count: number, batch: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let start = 0; start < count; start += batch) {
    const size = Math.min(batch, count - start);
    out.push(...(await Promise.all(Array.from({ length: size }, (_, j) => make(start + j)))));
  }
  return out;
}

describe.each(STORES)("AgentService on the $name", (store) => {
  let suite: Suite;

  beforeAll(async () => {
    suite = await store.start();
  });

  afterAll(async () => {
    await suite?.close();
  });

  it(`serves agents from the ${store.kind} store`, () => {
    expect(suite.server.context.storeKind).toBe(store.kind);
  });

  describe.each(PROTOCOL_NAMES)("over %s", (name) => {
    const call: Call = (method, request, headers) =>
      agentCaller(protocolNamed(suite, name))(method, request, headers);

    it.each(validCases)("create: valid $name, then the detail view", async (c) => {
      const before = Date.now();
      const created = await createOk(call, c.type, c.config);
      const after = Date.now();
      expect(created.agentId).toMatch(AGENT_ID);
      expect(created.status).toBe("pending");
      expect(created.createdAt).toMatch(ISO_UTC);
      const createdAt = new Date(created.createdAt);
      expect(createdAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(createdAt.getTime()).toBeLessThanOrEqual(after + 1000);

      const detail = dataOf(await call("GetAgent", { agentId: created.agentId })) as unknown as Detail;
      expect(detail).toEqual({
        agentId: created.agentId,
        type: c.type,
        status: "pending",
        config: c.stored,
        createdAt: created.createdAt,
        nextRunAt: expectedNextRun(createdAt, c.schedule).toISOString().replace(".000Z", "Z"),
        // Transfers and swaps alike wait for their wallet's approval of their own delegate, and say so.
        pendingReason: expect.stringMatching(
          /^waiting for an approval: the wallet \w+ must approve the delegate \w+ for at least/,
        ),
        // A swap agent says where its routes come from (here, the server's Swap API).
        ...(c.type === "swap"
          ? { notice: expect.stringMatching(/^swap routes come from|^no Swap API/) }
          : {}),
      });
      expect(detail).not.toHaveProperty("lastRunAt");
      expect(new Date(detail.nextRunAt).getTime()).toBe(expectedNextRun(createdAt, c.schedule).getTime());
    });

    it.each(cases.filter((c) => !(c.binaryOnly === true && isJsonProtocol(name))))(
      "$name",
      async ({ method, request, headers, expect: check }) => {
        check(await call(method, request, headers));
      },
    );

    it("create: an invalid request stores nothing", async () => {
      const { total } = await listOk(call);
      const outcome = await call("CreateAgent", create("transfer", transfer({ amount: 0 })), {
        "idempotency-key": `invalid-${randomBytes(6).toString("hex")}`,
      });
      expect(outcome.ok).toBe(false);
      expect((await listOk(call)).total).toBe(total);
    });

    it("list: a new agent comes first, as a summary", async () => {
      const created = await createOk(call, "swap", swap());
      const page = await listOk(call, { limit: 1 });
      expect(page.agents).toEqual([
        { agentId: created.agentId, type: "swap", status: "pending", createdAt: created.createdAt },
      ]);
      const swaps = await listOk(call, { type: "swap", status: "pending", limit: 1 });
      expect(swaps.agents[0]?.agentId).toBe(created.agentId);
      const transfers = await listOk(call, { type: "transfer", limit: 100 });
      expect(transfers.agents.map((a) => a.agentId)).not.toContain(created.agentId);
    });

    it("delete: deleted: true, then false, then GetAgent is not_found", async () => {
      const { agentId } = await createOk(call, "transfer", transfer());
      const { total } = await listOk(call);
      expect(await call("DeleteAgent", { agentId })).toEqual({
        ok: true,
        json: { success: true, data: { deleted: true } },
      });
      expect(await call("DeleteAgent", { agentId })).toEqual({
        ok: true,
        json: { success: true, data: { deleted: false } },
      });
      failsWith(Code.NotFound)(await call("GetAgent", { agentId }));
      expect((await listOk(call)).total).toBe(total - 1);
    });

    it("idempotency: the same key twice returns the first agent", async () => {
      const headers = { "idempotency-key": `twice-${randomBytes(8).toString("hex")}` };
      const { total } = await listOk(call);
      const first = await createOk(call, "transfer", transfer(), headers);
      const second = await createOk(call, "transfer", transfer(), headers);
      expect(second).toEqual(first);
      const page = await listOk(call, { limit: 100 });
      expect(page.total).toBe(total + 1);
      expect(page.agents.filter((a) => a.agentId === first.agentId)).toHaveLength(1);
    });

    it("idempotency: 10 concurrent creates with one key make one agent", async () => {
      const headers = { "idempotency-key": `burst-${randomBytes(8).toString("hex")}` };
      const { total } = await listOk(call);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => createOk(call, "swap", swap(), headers)),
      );
      expect(new Set(results.map((r) => r.agentId)).size).toBe(1);
      expect(new Set(results.map((r) => r.createdAt)).size).toBe(1);
      expect((await listOk(call)).total).toBe(total + 1);
      dataOf(await call("GetAgent", { agentId: results[0]?.agentId as string }));
    });

    it("idempotency: another key, or none, creates another agent", async () => {
      const key = `one-${randomBytes(8).toString("hex")}`;
      const { total } = await listOk(call);
      const a = await createOk(call, "transfer", transfer(), { "idempotency-key": key });
      const b = await createOk(call, "transfer", transfer(), { "idempotency-key": `${key}-other` });
      const c = await createOk(call, "transfer", transfer());
      const d = await createOk(call, "transfer", transfer());
      expect(new Set([a.agentId, b.agentId, c.agentId, d.agentId]).size).toBe(4);
      expect((await listOk(call)).total).toBe(total + 4);
    });
  });

  describe("with a controlled clock", () => {
    const clock = movableClock(new Date("2031-01-31T10:20:30.456Z"));
    let clocked: Suite;

    beforeAll(async () => {
      clocked = await store.start({ now: clock.now });
    });

    afterAll(async () => {
      await clocked?.close();
    });

    it.each([
      ["2031-01-31T10:20:30.456Z", "monthly", "2031-02-28T10:20:30.456Z"],
      ["2032-01-31T23:59:59.999Z", "monthly", "2032-02-29T23:59:59.999Z"],
      ["2031-12-15T00:00:00.000Z", "monthly", "2032-01-15T00:00:00Z"],
      ["2031-03-31T12:00:00.000Z", "monthly", "2031-04-30T12:00:00Z"],
      ["2031-12-31T23:30:00.000Z", "hourly", "2032-01-01T00:30:00Z"],
      ["2031-02-28T08:00:00.000Z", "daily", "2031-03-01T08:00:00Z"],
      ["2031-12-28T08:00:00.000Z", "weekly", "2032-01-04T08:00:00Z"],
    ] as const)("created at %s, %s: next run at %s", async (at, schedule, next) => {
      clock.set(new Date(at));
      expect(expectedNextRun(new Date(at), schedule).getTime()).toBe(Date.parse(next));
      for (const name of PROTOCOL_NAMES) {
        const call = agentCaller(protocolNamed(clocked, name));
        const created = await createOk(call, "transfer", transfer({ schedule }));
        expect(Date.parse(created.createdAt)).toBe(Date.parse(at));
        const detail = dataOf(await call("GetAgent", { agentId: created.agentId })) as unknown as Detail;
        expect(detail.nextRunAt).toBe(next);
      }
    });

    it("agents created at the same instant are listed by agentId descending", async () => {
      // Later than anything else this suite creates, so they make the first page.
      clock.set(new Date("2040-01-01T00:00:00.000Z"));
      const call = agentCaller(protocolNamed(clocked, PROTOCOL_NAMES[0] as string));
      const created = await Promise.all(
        Array.from({ length: 30 }, () => createOk(call, "transfer", transfer())),
      );
      const ids = created.map((c) => c.agentId).sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
      for (const name of PROTOCOL_NAMES) {
        const list = agentCaller(protocolNamed(clocked, name));
        const first = await listOk(list, { limit: 20 });
        const second = await listOk(list, { limit: 20, offset: 20 });
        expect([...first.agents, ...second.agents].slice(0, 30).map((a) => a.agentId)).toEqual(ids);
        expect(first.agents.every((a) => a.createdAt === "2040-01-01T00:00:00Z")).toBe(true);
      }
    });

    it("idempotency: a key returns its first agent for 24 hours, not longer", async () => {
      const t0 = new Date("2031-06-01T00:00:00.000Z");
      for (const name of PROTOCOL_NAMES) {
        const call = agentCaller(protocolNamed(clocked, name));
        const headers = { "idempotency-key": `ttl-${randomBytes(8).toString("hex")}` };
        clock.set(t0);
        const first = await createOk(call, "swap", swap(), headers);
        clock.set(new Date(t0.getTime() + 24 * HOUR_MS - 1));
        expect(await createOk(call, "swap", swap(), headers)).toEqual(first);
        clock.set(new Date(t0.getTime() + 24 * HOUR_MS));
        const later = await createOk(call, "swap", swap(), headers);
        expect(later.agentId).not.toBe(first.agentId);
        expect(Date.parse(later.createdAt)).toBe(t0.getTime() + 24 * HOUR_MS);
        // The later agent now owns the key.
        clock.set(new Date(t0.getTime() + 25 * HOUR_MS));
        expect(await createOk(call, "swap", swap(), headers)).toEqual(later);
      }
    });
  });

  describe("pagination over 260 agents", () => {
    const TRANSFERS = 140;
    const SWAPS = 120;
    let paged: Suite;
    /** Every agent created, as the create responses described them, newest first. */
    let all: Summary[];

    beforeAll(async () => {
      paged = await store.start();
      const call = agentCaller(protocolNamed(paged, PROTOCOL_NAMES[0] as string));
      all = await inBatches(TRANSFERS + SWAPS, 20, async (i) => {
        const isTransfer = i < TRANSFERS;
        const created = isTransfer
          ? await createOk(call, "transfer", transfer({ amount: i + 1 }))
          : await createOk(call, "swap", swap({ amount: i + 1 }));
        return {
          agentId: created.agentId,
          type: isTransfer ? "transfer" : "swap",
          status: "pending",
          createdAt: created.createdAt,
        };
      });
      all.sort(newestFirst);
    }, 120_000);

    afterAll(async () => {
      await paged?.close();
    });

    const filters: { name: string; request: Json; expected: () => Summary[] }[] = [
      { name: "no filter", request: {}, expected: () => all },
      { name: "type=transfer", request: { type: "transfer" }, expected: () => byType("transfer") },
      { name: "type=swap", request: { type: "swap" }, expected: () => byType("swap") },
      { name: "status=pending", request: { status: "pending" }, expected: () => all },
      { name: "status=active", request: { status: "active" }, expected: () => [] },
      { name: "status=paused", request: { status: "paused" }, expected: () => [] },
      {
        name: "type=swap, status=pending",
        request: { type: "swap", status: "pending" },
        expected: () => byType("swap"),
      },
      {
        name: "type=transfer, status=active",
        request: { type: "transfer", status: "active" },
        expected: () => [],
      },
    ];
    const byType = (type: string) => all.filter((a) => a.type === type);

    it("created what it meant to, with distinct ids", () => {
      expect(all).toHaveLength(TRANSFERS + SWAPS);
      expect(new Set(all.map((a) => a.agentId)).size).toBe(TRANSFERS + SWAPS);
    });

    describe.each(PROTOCOL_NAMES)("over %s", (name) => {
      it.each([7, 100])("pages of %i are disjoint, newest first, and together every agent", async (limit) => {
        const call = agentCaller(protocolNamed(paged, name));
        const seen: Summary[] = [];
        for (let offset = 0; ; offset += limit) {
          const page = await listOk(call, { limit, offset });
          expect(page.total).toBe(all.length);
          expect(page.limit).toBe(limit);
          expect(page.offset).toBe(offset);
          expect(page.agents.length).toBe(Math.max(0, Math.min(limit, all.length - offset)));
          if (page.agents.length === 0) break;
          seen.push(...page.agents);
        }
        expect(new Set(seen.map((a) => a.agentId)).size).toBe(seen.length);
        // The order the service returned is the order of its own createdAt/agentId values...
        expect([...seen].sort(newestFirst)).toEqual(seen);
        // ...and these are the values the creates answered.
        expect(seen).toEqual(all);
      });

      it.each(filters)("total and pages with $name", async ({ request, expected }) => {
        const call = agentCaller(protocolNamed(paged, name));
        const want = expected();
        const seen: Summary[] = [];
        for (let offset = 0; ; offset += 100) {
          const page = await listOk(call, { ...request, limit: 100, offset });
          expect(page.total).toBe(want.length);
          if (page.agents.length === 0) break;
          seen.push(...page.agents);
        }
        expect(seen).toEqual(want);
      });
    });
  });
});
