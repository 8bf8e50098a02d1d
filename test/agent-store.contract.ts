/**
 * The AgentStore contract: one suite every adapter must pass unchanged (memory and MongoDB, see
 * agent-store.test.ts). Each test gets a fresh, isolated store from `makeStore`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newAgentId } from "../src/agent/agent-id.ts";
import {
  AGENT_STATUSES,
  type AgentListQuery,
  type AgentRecord,
  type AgentStatus,
  type AgentStore,
  type AgentType,
  IDEMPOTENCY_TTL_MS,
} from "../src/agent/agent-store.ts";
import { builtInKinds } from "../src/kinds/built-in-kinds.ts";

/** The kinds' names, as the API accepts them. */
const AGENT_TYPES = builtInKinds().names;

export interface ContractFixture {
  readonly store: AgentStore;
  /** The store's clock (idempotency-key expiry). */
  readonly clock: { set(d: Date): void };
  cleanup(): Promise<void>;
}

const T0 = new Date("2030-01-01T00:00:00.000Z");
const RECORD_FIELDS = ["agentId", "config", "createdAt", "nextRunAt", "owner", "status", "type"];

let counter = 0;

/** A full record; every field can be overridden. */
function record(overrides: Partial<AgentRecord> = {}): AgentRecord {
  counter++;
  return {
    agentId: newAgentId(),
    owner: "owner-1",
    type: "transfer",
    status: "pending",
    config: { amount: String(counter), to: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin" },
    createdAt: new Date(T0.getTime() - counter * 1000),
    nextRunAt: new Date(T0.getTime() + 60_000),
    ...overrides,
  };
}

/** The reference order: createdAt descending, then agentId descending (binary, like MongoDB). */
function newestFirst(a: AgentRecord, b: AgentRecord): number {
  const byTime = b.createdAt.getTime() - a.createdAt.getTime();
  if (byTime !== 0) return byTime;
  return a.agentId < b.agentId ? 1 : a.agentId > b.agentId ? -1 : 0;
}

function ids(agents: readonly AgentRecord[]): string[] {
  return agents.map((a) => a.agentId);
}

export function describeAgentStoreContract(name: string, makeStore: () => Promise<ContractFixture>): void {
  describe(`AgentStore contract: ${name}`, () => {
    let fixture: ContractFixture;
    let store: AgentStore;

    beforeEach(async () => {
      fixture = await makeStore();
      fixture.clock.set(T0);
      store = fixture.store;
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    async function createAll(records: readonly AgentRecord[]): Promise<void> {
      // A few at a time: quick, without flooding a small test server.
      for (let i = 0; i < records.length; i += 25) {
        await Promise.all(records.slice(i, i + 25).map((r) => store.create({ record: r })));
      }
    }

    async function listAll(owner: string, query: Omit<AgentListQuery, "limit" | "offset">) {
      return store.list(owner, { ...query, limit: 100, offset: 0 });
    }

    describe("create and get", () => {
      it("round-trips every field, dates as Dates, and no lastRunAt key until set", async () => {
        const r = record({
          type: "swap",
          status: "active",
          config: {
            inputMint: "So11111111111111111111111111111111111111112",
            amount: "1.5",
            slippageBps: 50,
            nested: { list: [1, "two", true, null, { x: 1.25 }], empty: {} },
          },
          createdAt: new Date("2029-12-31T23:59:59.123Z"),
          nextRunAt: new Date("2030-01-01T00:05:00.456Z"),
        });
        const created = await store.create({ record: r });
        expect(created).toEqual({ agent: r, created: true });
        expect(Object.keys(created.agent).sort()).toEqual(RECORD_FIELDS);

        const got = await store.get(r.owner, r.agentId);
        expect(got).toEqual(r);
        expect(got).not.toBe(r);
        expect(Object.keys(got ?? {}).sort()).toEqual(RECORD_FIELDS);
        expect(got && "lastRunAt" in got).toBe(false);
        expect(got?.createdAt).toBeInstanceOf(Date);
        expect(got?.nextRunAt).toBeInstanceOf(Date);
        expect(got?.createdAt.getTime()).toBe(r.createdAt.getTime());
        expect(got?.nextRunAt?.getTime()).toBe(r.nextRunAt?.getTime());
      });

      it("round-trips lastRunAt when set", async () => {
        const r = record({ lastRunAt: new Date("2029-12-31T12:00:00.789Z") });
        await store.create({ record: r });
        const got = await store.get(r.owner, r.agentId);
        expect(got).toEqual(r);
        expect(got?.lastRunAt).toBeInstanceOf(Date);
        expect(Object.keys(got ?? {}).sort()).toEqual([...RECORD_FIELDS, "lastRunAt"].sort());
      });

      it("lists records with exactly the record fields", async () => {
        const r = record();
        await store.create({ record: r });
        const page = await listAll(r.owner, {});
        expect(page.agents).toEqual([r]);
        expect(Object.keys(page.agents[0] ?? {}).sort()).toEqual(RECORD_FIELDS);
      });

      it("hands out copies: mutating inputs or results does not change what is stored", async () => {
        const config = { amount: "1", nested: { n: 1 } };
        const r = record({ config });
        const created = await store.create({ record: r });
        config.amount = "changed";
        config.nested.n = 2;
        (created.agent.config as { amount: string }).amount = "changed too";
        const got = await store.get(r.owner, r.agentId);
        expect(got?.config).toEqual({ amount: "1", nested: { n: 1 } });
        if (got === undefined) throw new Error("agent missing");
        (got.config as { amount: string }).amount = "again";
        got.createdAt.setTime(0);
        const listed = (await listAll(r.owner, {})).agents[0];
        expect(listed?.config).toEqual({ amount: "1", nested: { n: 1 } });
        expect(listed?.createdAt.getTime()).toBe(r.createdAt.getTime());
      });

      it("returns undefined for an unknown agent", async () => {
        await store.create({ record: record() });
        expect(await store.get("owner-1", newAgentId())).toBeUndefined();
        expect(await store.get("nobody", newAgentId())).toBeUndefined();
      });
    });

    describe("owner isolation", () => {
      it("hides an agent from other owners in get, delete and list", async () => {
        const mine = record({ owner: "alice" });
        await store.create({ record: mine });

        expect(await store.get("bob", mine.agentId)).toBeUndefined();
        expect(await store.delete("bob", mine.agentId)).toBe(false);
        expect(await store.get("alice", mine.agentId)).toEqual(mine);
        expect(await listAll("bob", {})).toEqual({ agents: [], total: 0 });
        expect(await listAll("alice", {})).toEqual({ agents: [mine], total: 1 });
      });

      it("keeps idempotency keys per owner", async () => {
        const a = record({ owner: "alice" });
        const b = record({ owner: "bob" });
        expect(await store.create({ record: a, idempotencyKey: "same-key" })).toEqual({
          agent: a,
          created: true,
        });
        expect(await store.create({ record: b, idempotencyKey: "same-key" })).toEqual({
          agent: b,
          created: true,
        });
        expect((await listAll("alice", {})).total).toBe(1);
        expect((await listAll("bob", {})).total).toBe(1);
      });

      it("does not confuse owner/key pairs that concatenate alike", async () => {
        const a = record({ owner: "a:b" });
        const b = record({ owner: "a" });
        expect((await store.create({ record: a, idempotencyKey: "c" })).created).toBe(true);
        expect((await store.create({ record: b, idempotencyKey: "b:c" })).created).toBe(true);
        const c = record({ owner: 'a","b' });
        const d = record({ owner: "a" });
        expect((await store.create({ record: c, idempotencyKey: "c" })).created).toBe(true);
        expect((await store.create({ record: d, idempotencyKey: 'b","c' })).created).toBe(true);
        expect((await listAll("a", {})).total).toBe(2);
      });
    });

    describe("delete", () => {
      it("returns true once, then false", async () => {
        const r = record();
        const other = record();
        await createAll([r, other]);
        expect(await store.delete(r.owner, r.agentId)).toBe(true);
        expect(await store.delete(r.owner, r.agentId)).toBe(false);
        expect(await store.get(r.owner, r.agentId)).toBeUndefined();
        expect(await listAll(r.owner, {})).toEqual({ agents: [other], total: 1 });
      });

      it("returns false for an agent that never existed", async () => {
        expect(await store.delete("owner-1", newAgentId())).toBe(false);
      });
    });

    describe("list", () => {
      it("filters by type, by status, and by both", async () => {
        const records: AgentRecord[] = [];
        for (const type of AGENT_TYPES) {
          for (const status of AGENT_STATUSES) {
            records.push(record({ type, status }), record({ type, status }));
          }
        }
        records.push(record({ owner: "someone-else", type: "swap", status: "active" }));
        await createAll(records);
        const own = records.filter((r) => r.owner === "owner-1");

        const expectPage = async (
          query: { type?: AgentType; status?: AgentStatus },
          keep: (r: AgentRecord) => boolean,
        ) => {
          const expected = own.filter(keep).sort(newestFirst);
          const page = await listAll("owner-1", query);
          expect(ids(page.agents)).toEqual(ids(expected));
          expect(page.agents).toEqual(expected);
          expect(page.total).toBe(expected.length);
        };
        await expectPage({}, () => true);
        await expectPage({ type: "swap" }, (r) => r.type === "swap");
        await expectPage({ type: "transfer" }, (r) => r.type === "transfer");
        await expectPage({ status: "paused" }, (r) => r.status === "paused");
        await expectPage(
          { type: "swap", status: "active" },
          (r) => r.type === "swap" && r.status === "active",
        );
        await expectPage(
          { type: "transfer", status: "pending" },
          (r) => r.type === "transfer" && r.status === "pending",
        );
        expect(await listAll("owner-1", { type: "swap", status: "active" })).toMatchObject({ total: 2 });
      });

      it("sorts by createdAt descending, ties by agentId descending in binary order", async () => {
        const at = (iso: string) => new Date(iso);
        const tie = at("2030-01-01T00:00:00.000Z");
        // Byte order: '-' (45) < digits < upper case < '_' (95) < lower case.
        const records = [
          record({ agentId: "Zz", createdAt: tie }),
          record({ agentId: "a-", createdAt: tie }),
          record({ agentId: "newest", createdAt: at("2030-01-02T00:00:00.000Z") }),
          record({ agentId: "a_", createdAt: tie }),
          record({ agentId: "-x", createdAt: tie }),
          record({ agentId: "oldest", createdAt: at("2029-01-01T00:00:00.000Z") }),
          record({ agentId: "aA", createdAt: tie }),
          record({ agentId: "_y", createdAt: tie }),
          record({ agentId: "0later", createdAt: at("2030-01-01T00:00:00.001Z") }),
        ];
        for (const r of records) await store.create({ record: r });
        const page = await listAll("owner-1", {});
        expect(ids(page.agents)).toEqual(["newest", "0later", "a_", "aA", "a-", "_y", "Zz", "-x", "oldest"]);
      });

      it("paginates 260 agents into disjoint pages that together are all of them, for every filter", async () => {
        const base = T0.getTime();
        const records: AgentRecord[] = [];
        for (let i = 0; i < 260; i++) {
          records.push(
            record({
              owner: "pager",
              type: AGENT_TYPES[i % 2] ?? "transfer",
              status: AGENT_STATUSES[(i >> 1) % 3] ?? "pending",
              // 37 distinct instants, up to 8 agents on each: plenty of ties.
              createdAt: new Date(base - ((i * 7) % 37) * 1000),
            }),
          );
        }
        // Noise from another owner, with the same types, statuses and instants.
        for (let i = 0; i < 20; i++) {
          records.push(record({ owner: "not-pager", createdAt: new Date(base - (i % 37) * 1000) }));
        }
        await createAll(records);
        const own = records.filter((r) => r.owner === "pager");

        const filters: { type?: AgentType; status?: AgentStatus }[] = [
          {},
          { type: "swap" },
          { status: "active" },
          { type: "transfer", status: "paused" },
        ];
        for (const filter of filters) {
          const expected = ids(
            own
              .filter((r) => filter.type === undefined || r.type === filter.type)
              .filter((r) => filter.status === undefined || r.status === filter.status)
              .sort(newestFirst),
          );
          for (const limit of [100, 37, 10]) {
            const seen: string[] = [];
            for (let offset = 0; offset < expected.length; offset += limit) {
              const page = await store.list("pager", { ...filter, limit, offset });
              expect(page.total).toBe(expected.length);
              expect(page.agents.length).toBe(Math.min(limit, expected.length - offset));
              seen.push(...ids(page.agents));
            }
            expect(new Set(seen).size).toBe(seen.length);
            expect(seen).toEqual(expected);
          }
          const past = await store.list("pager", { ...filter, limit: 10, offset: expected.length });
          expect(past).toEqual({ agents: [], total: expected.length });
          const farPast = await store.list("pager", { ...filter, limit: 100, offset: 10_000 });
          expect(farPast).toEqual({ agents: [], total: expected.length });
        }
        expect(own.length).toBe(260);
        expect((await store.list("pager", { limit: 1, offset: 0 })).total).toBe(260);
      });

      it("returns an empty page for an owner without agents", async () => {
        expect(await store.list("nobody", { limit: 10, offset: 0 })).toEqual({ agents: [], total: 0 });
      });
    });

    describe("idempotency", () => {
      it("returns the first agent for a repeated key and stores no second one", async () => {
        const first = record();
        const second = record();
        expect(await store.create({ record: first, idempotencyKey: "key-1" })).toEqual({
          agent: first,
          created: true,
        });
        expect(await store.create({ record: second, idempotencyKey: "key-1" })).toEqual({
          agent: first,
          created: false,
        });
        expect(await store.get(second.owner, second.agentId)).toBeUndefined();
        expect(await listAll("owner-1", {})).toEqual({ agents: [first], total: 1 });
      });

      it("creates exactly one agent for 10 concurrent creates with one key", async () => {
        const records = Array.from({ length: 10 }, () => record());
        const results = await Promise.all(
          records.map((r) => store.create({ record: r, idempotencyKey: "k" })),
        );
        const winners = results.filter((r) => r.created);
        expect(winners).toHaveLength(1);
        const agentId = winners[0]?.agent.agentId;
        for (const result of results) expect(result.agent.agentId).toBe(agentId);
        const page = await listAll("owner-1", {});
        expect(page.total).toBe(1);
        expect(ids(page.agents)).toEqual([agentId]);
        expect(page.agents[0]).toEqual(records.find((r) => r.agentId === agentId));
      });

      it("takes an expired key over exactly once under 10 concurrent creates", async () => {
        const first = record();
        await store.create({ record: first, idempotencyKey: "k" });
        fixture.clock.set(new Date(T0.getTime() + IDEMPOTENCY_TTL_MS + 1));
        await expectOneNewAgent("k", [first.agentId]);
      });

      it("never brings a deleted agent back, even under 10 concurrent repeats of its key", async () => {
        const first = record();
        await store.create({ record: first, idempotencyKey: "k" });
        await store.delete(first.owner, first.agentId);
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.create({ record: record(), idempotencyKey: "k" })),
        );
        for (const result of results) expect(result).toEqual({ agent: first, created: false });
        expect(await listAll("owner-1", {})).toEqual({ agents: [], total: 0 });
        expect(await store.get(first.owner, first.agentId)).toBeUndefined();
      });

      it("refuses a repeat of a key with a different request, naming the header", async () => {
        const first = record();
        await store.create({ record: first, idempotencyKey: "fp", fingerprint: "transfer of 1.5" });
        await expect(
          store.create({ record: record(), idempotencyKey: "fp", fingerprint: "swap of 99999" }),
        ).rejects.toThrow(/idempotency-key was first used with a different request/);
        // The same request is still answered with the first agent; other owners' keys are theirs.
        expect(
          await store.create({ record: record(), idempotencyKey: "fp", fingerprint: "transfer of 1.5" }),
        ).toMatchObject({ agent: { agentId: first.agentId }, created: false });
        const other = record({ owner: "owner-2" });
        expect(
          await store.create({ record: other, idempotencyKey: "fp", fingerprint: "swap of 99999" }),
        ).toEqual({
          agent: other,
          created: true,
        });
      });

      it("50 concurrent creates with one key: one agent, every caller gets it", async () => {
        const records = Array.from({ length: 50 }, () => record());
        const results = await Promise.all(
          records.map((r) => store.create({ record: r, idempotencyKey: "burst", fingerprint: "same" })),
        );
        const ids50 = new Set(results.map((r) => r.agent.agentId));
        expect(ids50.size).toBe(1);
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect((await listAll("owner-1", {})).total).toBe(1);
      });

      /** 10 concurrent creates with `key`: one creates, all return its agent; `before` are kept. */
      async function expectOneNewAgent(key: string, before: readonly string[]): Promise<void> {
        const records = Array.from({ length: 10 }, () => record());
        const results = await Promise.all(
          records.map((r) => store.create({ record: r, idempotencyKey: key })),
        );
        const winners = results.filter((r) => r.created);
        expect(winners).toHaveLength(1);
        const agentId = winners[0]?.agent.agentId ?? "";
        expect(records.map((r) => r.agentId)).toContain(agentId);
        for (const result of results) expect(result.agent.agentId).toBe(agentId);
        const page = await listAll("owner-1", {});
        expect(new Set(ids(page.agents))).toEqual(new Set([...before, agentId]));
        expect(page.total).toBe(before.length + 1);
        expect(await store.create({ record: record(), idempotencyKey: key })).toMatchObject({
          agent: { agentId },
          created: false,
        });
      }

      it("creates independently without a key and with different keys", async () => {
        const a = record();
        const b = record();
        const c = record();
        const d = record();
        expect((await store.create({ record: a })).created).toBe(true);
        expect((await store.create({ record: b })).created).toBe(true);
        expect((await store.create({ record: c, idempotencyKey: "x" })).created).toBe(true);
        expect((await store.create({ record: d, idempotencyKey: "y" })).created).toBe(true);
        expect((await listAll("owner-1", {})).total).toBe(4);
      });

      it("keeps the key for just under 24 h, and lets it create again after", async () => {
        const first = record();
        await store.create({ record: first, idempotencyKey: "daily" });

        fixture.clock.set(new Date(T0.getTime() + IDEMPOTENCY_TTL_MS - 1));
        const repeat = await store.create({ record: record(), idempotencyKey: "daily" });
        expect(repeat).toEqual({ agent: first, created: false });

        const later = new Date(T0.getTime() + IDEMPOTENCY_TTL_MS + 1);
        fixture.clock.set(later);
        const fresh = record();
        expect(await store.create({ record: fresh, idempotencyKey: "daily" })).toEqual({
          agent: fresh,
          created: true,
        });
        // The key now belongs to the new agent, for another 24 h from its first use.
        fixture.clock.set(new Date(later.getTime() + IDEMPOTENCY_TTL_MS - 1));
        expect(await store.create({ record: record(), idempotencyKey: "daily" })).toEqual({
          agent: fresh,
          created: false,
        });
        const page = await listAll("owner-1", {});
        expect(page.total).toBe(2);
        expect(new Set(ids(page.agents))).toEqual(new Set([first.agentId, fresh.agentId]));
      });

      it("replays the first answer when the first agent was deleted, and keeps it deleted", async () => {
        const first = record();
        await store.create({ record: first, idempotencyKey: "gone" });
        expect(await store.delete(first.owner, first.agentId)).toBe(true);
        expect(await store.create({ record: record(), idempotencyKey: "gone" })).toEqual({
          agent: first,
          created: false,
        });
        expect(await listAll("owner-1", {})).toEqual({ agents: [], total: 0 });
      });
    });

    describe("due", () => {
      const at = (ms: number) => new Date(T0.getTime() + ms);
      const active = (nextRunAt: Date, overrides: Partial<AgentRecord> = {}) =>
        record({ status: "active", nextRunAt, ...overrides });

      it("answers the active agents due by now, earliest first, of every owner, and pages through pending ones apart", async () => {
        const late = active(at(-3_000), { owner: "owner-2" });
        const early = active(at(-9_000));
        const now = active(at(0));
        const future = active(at(1));
        const pending = record({ status: "pending", nextRunAt: at(-60_000) });
        const otherPending = record({ status: "pending", nextRunAt: at(60_000), owner: "owner-2" });
        const paused = record({ status: "paused", nextRunAt: at(-5_000) });
        const failed = record({ status: "failed", nextRunAt: at(-5_000) });
        await createAll([late, early, now, future, pending, otherPending, paused, failed]);
        expect(ids(await store.due(T0, 10))).toEqual(ids([early, late, now]));
        // Pending agents, oldest first (ties by id), every owner's, a page at a time after a cursor.
        const byAge = [pending, otherPending].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
        expect(ids(await store.pending(undefined, 10))).toEqual(ids(byAge));
        expect(ids(await store.pending(undefined, 1))).toEqual(ids(byAge.slice(0, 1)));
        expect(ids(await store.pending(byAge[0], 10))).toEqual(ids(byAge.slice(1)));
        expect(await store.pending(byAge[1], 10)).toEqual([]);
      });

      it("pages pending agents by creation, then id, and counts each owner's agents by what caps them", async () => {
        const at0 = record({ status: "pending", createdAt: at(-2_000) });
        const at1 = [
          record({ status: "pending", createdAt: at(-1_000) }),
          record({ status: "pending", createdAt: at(-1_000), owner: "owner-2" }),
        ].sort((a, b) => (a.agentId < b.agentId ? -1 : 1));
        const at2 = record({ status: "pending", createdAt: at(0) });
        const activeOne = record({ status: "active", nextRunAt: at(5_000) });
        const pausedOne = record({ status: "paused" });
        const failedOne = record({ status: "failed" });
        // Created out of order: the store keeps them in order itself.
        await createAll([at2, ...at1, at0, activeOne, pausedOne, failedOne]);
        const order = [at0, ...at1, at2];
        expect(ids(await store.pending(undefined, 10))).toEqual(ids(order));
        expect(ids(await store.pending(order[1], 10))).toEqual(ids(order.slice(2)));
        expect(ids(await store.pending({ createdAt: at(-1_000), agentId: "" }, 2))).toEqual(ids(at1));
        expect(ids(await store.newestPending(3))).toEqual(ids([at2, ...[...at1].reverse()]));
        expect(await store.countOf("owner-1")).toEqual({ held: 5, pending: 3 });
        expect(await store.countOf("owner-2")).toEqual({ held: 1, pending: 1 });
        expect(await store.countOf("nobody")).toEqual({ held: 0, pending: 0 });
        // Activated: no longer pending, still held; deleted: neither.
        await store.update("owner-1", at0.agentId, () => ({ status: "active" }));
        await store.delete("owner-1", at2.agentId);
        expect(ids(await store.pending(undefined, 10))).toEqual(ids(at1));
        expect(await store.countOf("owner-1")).toEqual({ held: 4, pending: 1 });
      });

      it("answers at most `limit`, and follows changes: an advanced or paused agent leaves, a resumed one comes back", async () => {
        const agents = Array.from({ length: 30 }, (_, i) => active(at(-1_000 * (30 - i))));
        await createAll(agents);
        expect(ids(await store.due(T0, 5))).toEqual(ids(agents.slice(0, 5)));
        // The same poll twice gives the same answer: due agents stay due until they change.
        expect(ids(await store.due(T0, 5))).toEqual(ids(agents.slice(0, 5)));
        const [first, second, third] = agents as [AgentRecord, AgentRecord, AgentRecord];
        await store.update(first.owner, first.agentId, () => ({ nextRunAt: at(3_600_000) }));
        await store.update(second.owner, second.agentId, () => ({ status: "paused", nextRunAt: null }));
        await store.delete(third.owner, third.agentId);
        expect(ids(await store.due(T0, 3))).toEqual(ids(agents.slice(3, 6)));
        await store.update(second.owner, second.agentId, () => ({
          status: "active",
          nextRunAt: at(-60_000),
        }));
        expect(ids(await store.due(T0, 2))).toEqual(ids([second, agents[3] as AgentRecord]));
        // Much later, the advanced one is due again, in its place.
        expect((await store.due(at(3_600_000), 100)).map((a) => a.agentId).at(-1)).toBe(first.agentId);
        expect(await store.due(at(-60_001), 10)).toEqual([]);
      });

      it("hands out copies of full records", async () => {
        const agent = active(at(-1));
        await createAll([agent]);
        const [due] = await store.due(T0, 1);
        expect(due).toEqual(agent);
        (due as { status: string }).status = "paused";
        expect((await store.due(T0, 1))[0]?.status).toBe("active");
      });
    });

    describe("watching", () => {
      it("pages the active and paused agents of one type across owners by id, and keeps a kind's state", async () => {
        const trigger = (overrides: Partial<AgentRecord>) => record({ type: "trigger", ...overrides });
        const open = [
          trigger({ status: "active" }),
          trigger({ status: "paused", owner: "owner-2" }),
          trigger({ status: "active", state: { firing: { leg: "single", referencePriceUsd: 0.3 } } }),
        ].sort((a, b) => (a.agentId < b.agentId ? -1 : 1));
        const ended = [
          trigger({ status: "pending" }),
          trigger({ status: "failed" }),
          trigger({ status: "completed" }),
          trigger({ status: "expired" }),
        ];
        await createAll([...open, ...ended, record({ status: "active" })]);
        expect(ids(await store.watching("trigger", undefined, 10))).toEqual(ids(open));
        expect(ids(await store.watching("trigger", undefined, 2))).toEqual(ids(open.slice(0, 2)));
        expect(ids(await store.watching("trigger", open[1]?.agentId, 10))).toEqual(ids(open.slice(2)));
        expect(await store.watching("swap", undefined, 10)).toEqual([]);
        const kept = (await store.watching("trigger", undefined, 10)).find((a) => a.state !== undefined);
        expect(kept?.state).toEqual({ firing: { leg: "single", referencePriceUsd: 0.3 } });
        // Completed and expired agents hold no place under the owner's caps, as failed ones.
        expect(await store.countOf("owner-1")).toEqual({ held: 4, pending: 1 });
        // A state is set and removed like any lifecycle field.
        const [first] = open as [AgentRecord];
        await store.update(first.owner, first.agentId, () => ({ state: { firing: { leg: "stop_loss" } } }));
        expect((await store.get(first.owner, first.agentId))?.state).toEqual({
          firing: { leg: "stop_loss" },
        });
        await store.update(first.owner, first.agentId, () => ({ state: null, status: "completed" }));
        const done = await store.get(first.owner, first.agentId);
        expect(done?.state).toBeUndefined();
        expect(ids(await store.watching("trigger", undefined, 10))).not.toContain(first.agentId);
      });
    });

    it("ping resolves", async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
