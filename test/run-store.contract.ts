/**
 * The RunStore contract, run against every adapter: leases on slots, take-over after expiry,
 * fencing of a holder that lost its lease, at most one settling run per slot, and the history.
 */
import { describe, expect, it } from "vitest";
import { CLOCK_SKEW_ALLOWANCE_MS } from "../src/domain/clock-skew.ts";
import type { Lease, RunRecord, RunStore, SlotRef } from "../src/scheduler/run-store.ts";
import { runIdOf } from "../src/scheduler/run-store.ts";

export interface RunStoreFixture {
  readonly store: RunStore;
  cleanup(): Promise<void>;
}

const LEASE_MS = 10_000;
const T0 = new Date("2031-03-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
let agents = 0;

function slotOf(owner = "owner-1", scheduledAt = T0): SlotRef {
  return { agentId: `agent-${++agents}-${Math.random().toString(36).slice(2, 8)}`, owner, scheduledAt };
}

function runOf(slot: SlotRef, attempt: number, outcome: RunRecord["outcome"], finishedAt: Date): RunRecord {
  return {
    runId: runIdOf(slot, attempt),
    agentId: slot.agentId,
    owner: slot.owner,
    scheduledAt: slot.scheduledAt,
    attempt,
    startedAt: new Date(finishedAt.getTime() - 5),
    finishedAt,
    outcome,
    ...(outcome === "succeeded"
      ? { result: { amount: 1.5, token: "USDC" } }
      : { error: "simulated failure" }),
  };
}

export function describeRunStoreContract(name: string, makeFixture: () => Promise<RunStoreFixture>): void {
  describe(`RunStore contract: ${name}`, () => {
    async function withStore(test: (store: RunStore) => Promise<void>): Promise<void> {
      const fixture = await makeFixture();
      try {
        await test(fixture.store);
      } finally {
        await fixture.cleanup();
      }
    }

    it("gives a free slot to one claimer, generation 0, and refuses it to others while held", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const lease = await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS });
        expect(lease?.generation).toBe(0);
        expect(lease?.leaseUntil.toISOString()).toBe(at(LEASE_MS).toISOString());
        expect(
          await store.claim(slot, { worker: "b", now: at(LEASE_MS - 1), leaseMs: LEASE_MS }),
        ).toBeUndefined();
        // Past the lease but within the clock-skew allowance: still refused.
        expect(
          await store.claim(slot, {
            worker: "b",
            now: at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS - 1),
            leaseMs: LEASE_MS,
          }),
        ).toBeUndefined();
      }));

    it("of 20 concurrent claimers of one slot, exactly one wins", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const leases = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.claim(slot, { worker: `w${i}`, now: T0, leaseMs: LEASE_MS }),
          ),
        );
        expect(leases.filter((l) => l !== undefined)).toHaveLength(1);
      }));

    it("lets one of many replicas take over an expired lease, and fences the old holder out", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const old = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        const later = at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS);
        const takers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.claim(slot, { worker: `b${i}`, now: later, leaseMs: LEASE_MS }),
          ),
        );
        const won = takers.filter((l) => l !== undefined);
        expect(won).toHaveLength(1);
        expect(won[0]?.generation).toBe(1);
        // The old holder believes (by its own slow clock) that its lease still runs: it is still out.
        const stale = at(LEASE_MS - 1);
        expect(await store.renew(old, { now: stale, leaseMs: LEASE_MS })).toBeUndefined();
        expect(
          await store.record(old, runOf(slot, 1, "succeeded", stale), { now: stale, settles: true }),
        ).toBe("lease_lost");
        expect(await store.settled(slot)).toBeUndefined();
      }));

    it("a holder whose own lease ran out cannot record, even with no taker yet", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const lease = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        const late = at(LEASE_MS);
        expect(
          await store.record(lease, runOf(slot, 1, "succeeded", late), { now: late, settles: true }),
        ).toBe("lease_lost");
        expect(await store.renew(lease, { now: late, leaseMs: LEASE_MS })).toBeUndefined();
      }));

    it("renewing extends the lease, so no take-over happens while the holder lives", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const first = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        const renewed = await store.renew(first, { now: at(LEASE_MS / 2), leaseMs: LEASE_MS });
        expect(renewed?.leaseUntil.toISOString()).toBe(at(LEASE_MS * 1.5).toISOString());
        const afterFirstEnd = at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS);
        expect(
          await store.claim(slot, { worker: "b", now: afterFirstEnd, leaseMs: LEASE_MS }),
        ).toBeUndefined();
        expect(
          await store.record(renewed as Lease, runOf(slot, 1, "succeeded", afterFirstEnd), {
            now: afterFirstEnd,
            settles: true,
          }),
        ).toBe("recorded");
      }));

    it("settles a slot once: it cannot be claimed again and a second settling run is a duplicate", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const lease = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        expect(
          await store.record(lease, runOf(slot, 1, "failed", at(1)), { now: at(1), settles: false }),
        ).toBe("recorded");
        expect(await store.attempts(slot)).toBe(1);
        expect(
          await store.record(lease, runOf(slot, 1, "failed", at(2)), { now: at(2), settles: false }),
        ).toBe("duplicate");
        expect(
          await store.record(lease, runOf(slot, 2, "succeeded", at(3)), { now: at(3), settles: true }),
        ).toBe("recorded");
        expect(
          await store.record(lease, runOf(slot, 3, "succeeded", at(4)), { now: at(4), settles: true }),
        ).toBe("duplicate");
        expect((await store.settled(slot))?.attempt).toBe(2);
        expect(await store.attempts(slot)).toBe(2);
        const muchLater = at(10 * LEASE_MS);
        expect(await store.claim(slot, { worker: "b", now: muchLater, leaseMs: LEASE_MS })).toBeUndefined();
      }));

    it("continues the attempt count after a take-over", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const a = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        await store.record(a, runOf(slot, 1, "failed", at(1)), { now: at(1), settles: false });
        const later = at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS);
        const b = (await store.claim(slot, { worker: "b", now: later, leaseMs: LEASE_MS })) as Lease;
        expect(await store.attempts(slot)).toBe(1);
        expect(await store.record(b, runOf(slot, 2, "succeeded", later), { now: later, settles: true })).toBe(
          "recorded",
        );
      }));

    it("release lets another replica claim at once", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const a = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        await store.release(a);
        const b = await store.claim(slot, { worker: "b", now: at(1), leaseMs: LEASE_MS });
        expect(b?.generation).toBe(1);
        expect(await store.record(a, runOf(slot, 1, "succeeded", at(2)), { now: at(2), settles: true })).toBe(
          "lease_lost",
        );
      }));

    it("lists an agent's runs newest first with a total, paged, and only to its owner", () =>
      withStore(async (store) => {
        const first = slotOf("owner-x", T0);
        const agentId = first.agentId;
        const slots = [0, 1, 2].map((k) => ({ ...first, scheduledAt: at(k * 3_600_000) }));
        for (const slot of slots) {
          const lease = (await store.claim(slot, {
            worker: "a",
            now: slot.scheduledAt,
            leaseMs: LEASE_MS,
          })) as Lease;
          const t = slot.scheduledAt.getTime();
          await store.record(lease, runOf(slot, 1, "failed", new Date(t + 1)), {
            now: new Date(t + 1),
            settles: false,
          });
          await store.record(lease, runOf(slot, 2, "succeeded", new Date(t + 2)), {
            now: new Date(t + 2),
            settles: true,
          });
        }
        const page = await store.list("owner-x", agentId, { limit: 4, offset: 0 });
        expect(page.total).toBe(6);
        expect(page.runs.map((r) => [r.scheduledAt.toISOString(), r.attempt, r.outcome])).toEqual([
          [at(7_200_000).toISOString(), 2, "succeeded"],
          [at(7_200_000).toISOString(), 1, "failed"],
          [at(3_600_000).toISOString(), 2, "succeeded"],
          [at(3_600_000).toISOString(), 1, "failed"],
        ]);
        expect(page.runs[0]?.result).toEqual({ amount: 1.5, token: "USDC" });
        expect(page.runs[1]?.error).toBe("simulated failure");
        expect(page.runs[0]?.runId).toBe(runIdOf(slots[2] as SlotRef, 2));
        const rest = await store.list("owner-x", agentId, { limit: 4, offset: 4 });
        expect(rest.runs.map((r) => r.attempt)).toEqual([2, 1]);
        expect(await store.list("owner-y", agentId, { limit: 10, offset: 0 })).toEqual({
          runs: [],
          total: 0,
        });
      }));

    it("keeps a slot's signed transactions, fenced by the lease: the insert first, the check after", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const first = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        const tx = { signature: "sig-1", lastValidBlockHeight: 2n ** 63n + 5n, transaction: "AQID" };
        expect(await store.recordTransaction(first, tx, { now: at(1) })).toBe("recorded");
        // The same transaction again is kept once.
        expect(await store.recordTransaction(first, tx, { now: at(2) })).toBe("recorded");
        expect(await store.transactions(slot)).toEqual([{ ...tx, generation: 0, recordedAt: at(1) }]);
        // A take-over: the stalled holder may still write its transaction down, but learns that it
        // must not send it; the new holder sees both, oldest first.
        const later = at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS + 1);
        const second = (await store.claim(slot, { worker: "b", now: later, leaseMs: LEASE_MS })) as Lease;
        expect(second.generation).toBe(1);
        const stale = { signature: "sig-2", lastValidBlockHeight: 10n, transaction: "BAUG" };
        expect(await store.recordTransaction(first, stale, { now: later })).toBe("lease_lost");
        const mine = { signature: "sig-3", lastValidBlockHeight: 11n, transaction: "BwgJ" };
        expect(
          await store.recordTransaction(second, mine, { now: at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS + 2) }),
        ).toBe("recorded");
        const kept = await store.transactions(slot);
        expect(kept.map((t) => [t.signature, t.generation])).toEqual([
          ["sig-1", 0],
          ["sig-2", 0],
          ["sig-3", 1],
        ]);
        expect(await store.transactions(slotOf())).toEqual([]);
      }));

    it("answers an agent's successes earlier on a slot's UTC day, kept with the slot before it or from the history", () =>
      withStore(async (store) => {
        const base = slotOf("owner-d");
        const day2 = (hours: number) => new Date(Date.UTC(2031, 2, 2, hours));
        const slots: [Date, RunRecord["outcome"]][] = [
          [new Date(Date.UTC(2031, 2, 1, 23)), "succeeded"],
          [day2(0), "succeeded"],
          [day2(1), "failed"],
          [day2(2), "succeeded"],
        ];
        let previous: Date | undefined;
        for (const [scheduledAt, outcome] of slots) {
          const slot = { ...base, scheduledAt };
          const lease = (await store.claim(slot, {
            worker: "a",
            now: scheduledAt,
            leaseMs: LEASE_MS,
          })) as Lease;
          // As the scheduler does: what the slot learned of its day goes with its settling run.
          const today = await store.succeededToday(slot, previous);
          const finishedAt = new Date(scheduledAt.getTime() + 1);
          expect(
            await store.record(lease, runOf(slot, 1, outcome, finishedAt), {
              now: finishedAt,
              settles: true,
              today,
            }),
          ).toBe("recorded");
          previous = scheduledAt;
        }
        const expected = [
          [day2(0).toISOString(), "succeeded", { amount: 1.5, token: "USDC" }],
          [day2(2).toISOString(), "succeeded", { amount: 1.5, token: "USDC" }],
        ];
        const summary = (runs: readonly RunRecord[]) =>
          runs.map((r) => [r.scheduledAt.toISOString(), r.outcome, r.result]);
        const today = await store.succeededToday({ ...base, scheduledAt: day2(3) }, day2(2));
        expect(summary(today)).toEqual(expected);
        expect(today[0]?.runId).toBe(runIdOf({ ...base, scheduledAt: day2(0) }, 1));
        // The slot before did not run (or kept nothing): the same answer, from the history.
        expect(summary(await store.succeededToday({ ...base, scheduledAt: day2(4) }, day2(3)))).toEqual(
          expected,
        );
        // Only those before the slot asked about, only that day's, only to the owner.
        expect(
          (await store.succeededToday({ ...base, scheduledAt: day2(2) }, day2(1))).map((r) => r.scheduledAt),
        ).toEqual([day2(0)]);
        expect(
          await store.succeededToday({ ...base, scheduledAt: day2(0) }, new Date(Date.UTC(2031, 2, 1, 23))),
        ).toEqual([]);
        expect(
          await store.succeededToday({ ...base, owner: "someone-else", scheduledAt: day2(3) }, day2(2)),
        ).toEqual([]);
      }));

    it("a failed attempt recorded by a holder that lost its lease is refused too", () =>
      withStore(async (store) => {
        const slot = slotOf();
        const old = (await store.claim(slot, { worker: "a", now: T0, leaseMs: LEASE_MS })) as Lease;
        const later = at(LEASE_MS + CLOCK_SKEW_ALLOWANCE_MS);
        expect((await store.claim(slot, { worker: "b", now: later, leaseMs: LEASE_MS }))?.generation).toBe(1);
        const stale = at(LEASE_MS - 1);
        expect(await store.record(old, runOf(slot, 1, "failed", stale), { now: stale, settles: false })).toBe(
          "lease_lost",
        );
        expect(await store.attempts(slot)).toBe(0);
      }));

    it("lists an agent's succeeded runs from a slot time on (caps per day)", () =>
      withStore(async (store) => {
        const base = slotOf();
        const slotAt = (ms: number): SlotRef => ({ ...base, scheduledAt: at(ms) });
        for (const [ms, outcome] of [
          [0, "succeeded"],
          [1000, "failed"],
          [2000, "succeeded"],
        ] as const) {
          const slot = slotAt(ms);
          const lease = (await store.claim(slot, { worker: "a", now: at(ms), leaseMs: LEASE_MS })) as Lease;
          await store.record(lease, runOf(slot, 1, outcome, at(ms + 1)), { now: at(ms + 1), settles: true });
        }
        const since = await store.succeededSince(base.owner, base.agentId, at(1000));
        expect(since.map((r) => r.scheduledAt.toISOString())).toEqual([at(2000).toISOString()]);
        expect(await store.succeededSince("someone-else", base.agentId, T0)).toEqual([]);
      }));

    it("settles a slot as skipped: listed with its result, and never counted as a success", () =>
      withStore(async (store) => {
        const base = slotOf();
        const slotAt = (ms: number): SlotRef => ({ ...base, scheduledAt: at(ms) });
        const skipped: RunRecord = {
          ...runOf(slotAt(1000), 1, "skipped", at(1001)),
          error: undefined as never,
          result: { kind: "swap", skipped: true, quotedPrice: 140, minPrice: 150 },
        };
        delete (skipped as { error?: string }).error;
        const first = slotAt(0);
        const lease0 = (await store.claim(first, { worker: "a", now: at(0), leaseMs: LEASE_MS })) as Lease;
        const success = runOf(first, 1, "succeeded", at(1));
        await store.record(lease0, success, { now: at(1), settles: true, today: [] });
        const lease = (await store.claim(slotAt(1000), {
          worker: "a",
          now: at(1000),
          leaseMs: LEASE_MS,
        })) as Lease;
        expect(await store.record(lease, skipped, { now: at(1001), settles: true, today: [success] })).toBe(
          "recorded",
        );
        // Settled: no one claims it again.
        expect(
          await store.claim(slotAt(1000), { worker: "b", now: at(1000 + 3 * LEASE_MS), leaseMs: LEASE_MS }),
        ).toBeUndefined();
        expect((await store.settled(slotAt(1000)))?.outcome).toBe("skipped");
        const page = await store.list(base.owner, base.agentId, { limit: 10, offset: 0 });
        expect(page.runs.map((r) => [r.outcome, r.result])).toEqual([
          ["skipped", { kind: "swap", skipped: true, quotedPrice: 140, minPrice: 150 }],
          ["succeeded", { amount: 1.5, token: "USDC" }],
        ]);
        const since = await store.succeededSince(base.owner, base.agentId, T0);
        expect(since.map((r) => r.outcome)).toEqual(["succeeded"]);
        // The next slot's day: the skipped slot before it adds no success of its own.
        const today = await store.succeededToday(slotAt(2000), at(1000));
        expect(today.map((r) => [r.outcome, r.scheduledAt.toISOString()])).toEqual([
          ["succeeded", at(0).toISOString()],
        ]);
      }));
  });
}
