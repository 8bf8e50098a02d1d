/**
 * The watch of open trigger orders, one per replica: every PRICE_WATCH_INTERVAL_MS one price
 * request per source for every watched token at once (not one per order), the reference price of
 * each token from its fresh samples (the median of the sources), and the book (trigger-book.ts),
 * which hands back the legs that a run of confirming observations fired, at a cost in the number
 * of orders the price crossed, not the number open.
 *
 * A fired leg becomes a slot: the order's next run moved to now, with the firing kept on the
 * agent, through the store's versioned update, on the condition that no firing is kept yet. So
 * however many replicas confirm the same order, one change lands, and the slot it sets runs
 * once, through the scheduler's lease and journal like any other. The trigger.fired event goes
 * with that change.
 *
 * Each replica reads the open orders again every TRIGGER_REFRESH_MS (those created or resumed
 * through others, those that waited again after a fill was refused), and expires paused ones
 * whose time ran out (an active order's expiry is its slot's).
 */
import { randomBytes } from "node:crypto";
import type { AgentRecord, AgentStore } from "../../agent/agent-store.ts";
import { UnavailableError } from "../../domain/errors.ts";
import { forEachConcurrently } from "../../scheduler/stages/for-each-concurrently.ts";
import type { PriceSource } from "../../token/token-source.ts";
import { createTriggerBook, type Firing, type TriggerBook } from "./trigger-book.ts";
import { firingOf, firingState, type TriggerFiringState } from "./trigger-firing.ts";
import { orderOf } from "./trigger-order.ts";
import { referencePrice } from "./trigger-reference.ts";
import { createTriggerRefresh } from "./trigger-refresh.ts";
import type { TriggerSightings } from "./trigger-sightings.ts";

/** Firings written at once: each is one versioned update of its agent. */
const FIRING_PARALLELISM = 16;
/** Tells this watch's firings from another replica's that landed the same millisecond. */
const newWatchId = () => randomBytes(6).toString("base64url");

export interface TriggerPriceSource {
  readonly name: string;
  readonly prices: PriceSource;
}

export interface TriggerWatchOptions {
  /** The kind's name in the store. */
  readonly type: string;
  readonly agents: Pick<AgentStore, "watching" | "update">;
  /** Where reference prices come from; with more than one, the reference is their median. */
  readonly sources: readonly TriggerPriceSource[];
  readonly sightings: TriggerSightings;
  readonly mintOf: (symbol: string) => string | undefined;
  readonly intervalMs: number;
  readonly refreshMs: number;
  /** PRICE_TTL_MS: an older price is no observation. */
  readonly ttlMs: number;
  readonly maxWatched: number;
  readonly confirmations: number;
  readonly holdMs: number;
  readonly now?: () => Date;
  /** An order fired here: its slot is due now (the scheduler may poll at once). */
  readonly onFired?: (agent: AgentRecord) => void;
  readonly onError?: (error: unknown, what: string) => void;
  /** A look at one token: a fresh reference price was had, or none could be. */
  readonly onObserved?: (fresh: boolean) => void;
}

export interface TriggerWatch {
  /** Starts watching (refresh, then a look every interval). */
  start(): void;
  /** One round now: a refresh when one is due, then one look at every watched token. */
  tick(): Promise<void>;
  stop(): Promise<void>;
  /** Legs in the book. */
  size(): number;
}

export function createTriggerWatch(options: TriggerWatchOptions): TriggerWatch {
  const { agents, sightings, type } = options;
  const now = options.now ?? (() => new Date());
  const book: TriggerBook = createTriggerBook({
    confirmations: options.confirmations,
    holdMs: options.holdMs,
  });
  /** The orders in the book: agentId -> owner (what a firing's update needs). */
  const owners = new Map<string, string>();
  const watchId = newWatchId();
  let refreshedAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let started = false;
  let stopped = false;

  const forget = (agentId: string) => {
    book.remove(agentId);
    owners.delete(agentId);
  };

  const readOpen = createTriggerRefresh({
    type,
    agents,
    book,
    owners,
    mintOf: options.mintOf,
    maxWatched: options.maxWatched,
    onError: options.onError,
  });
  async function refresh(): Promise<void> {
    const nowMs = now().getTime();
    await readOpen(nowMs);
    sightings.keepOnly(new Set(book.tokens()));
    refreshedAt = nowMs;
  }

  async function fire(firing: Firing): Promise<void> {
    const { leg, observations } = firing;
    const owner = owners.get(leg.agentId);
    forget(leg.agentId);
    if (owner === undefined) return;
    const at = now();
    const last = observations[observations.length - 1];
    if (last === undefined) return;
    const state: TriggerFiringState = {
      leg: leg.leg,
      condition: leg.condition,
      priceUsd: leg.priceUsd,
      referencePriceUsd: last.priceUsd,
      observations: observations.map((o) => ({ priceUsd: o.priceUsd, at: new Date(o.atMs).toISOString() })),
      firedAt: at.toISOString(),
      firedBy: watchId,
    };
    const updated = await agents.update(owner, leg.agentId, (current) => {
      const live = current.status === "active" && firingOf(current.state) === undefined;
      const inTime = new Date(orderOf(current.config).expiresAt).getTime() > at.getTime();
      return live && inTime
        ? {
            nextRunAt: at,
            state: firingState(state),
            announce: { type: "trigger.fired", data: { trigger: firingState(state).firing ?? null } },
          }
        : undefined;
    });
    if (updated !== undefined && firingOf(updated.state)?.firedAt === state.firedAt)
      options.onFired?.(updated);
  }

  async function look(): Promise<void> {
    const tokens = book.tokens();
    if (tokens.length === 0) return;
    const samples = await sample(options.sources, tokens, options.onError);
    const nowMs = now().getTime();
    const fired: Firing[] = [];
    tokens.forEach((token, i) => {
      const reference = referencePrice(
        samples.map((s) => {
          const price = s.prices?.[i];
          return {
            source: s.source,
            priceUsd: price === undefined || price.unpriced || price.mint !== token ? undefined : price.price,
            atMs: price?.asOf.getTime(),
          };
        }),
        { nowMs, ttlMs: options.ttlMs },
      );
      options.onObserved?.(reference.ok);
      if (!reference.ok) {
        const down = samples.map((s) => s.problem).filter((p) => p !== undefined);
        sightings.missed(token, down.length > 0 ? down.join("; ") : reference.reason);
        return;
      }
      sightings.seen(token, { priceUsd: reference.priceUsd, atMs: reference.atMs });
      fired.push(...book.observe(token, { priceUsd: reference.priceUsd, atMs: reference.atMs }));
    });
    // A few at once: one versioned update each, a round trip apiece on a remote database.
    await forEachConcurrently(fired, FIRING_PARALLELISM, (firing) =>
      fire(firing).catch((error) => options.onError?.(error, "firing a trigger order")),
    );
  }

  async function round(): Promise<void> {
    if (now().getTime() - refreshedAt >= options.refreshMs) {
      await refresh().catch((error) => options.onError?.(error, "reading open trigger orders"));
    }
    await look().catch((error) => options.onError?.(error, "watching trigger prices"));
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = round().finally(() => {
        running = undefined;
        schedule();
      });
    }, options.intervalMs);
    timer.unref?.();
  }

  return {
    start() {
      if (started || stopped) return;
      started = true;
      running = round().finally(() => {
        running = undefined;
        schedule();
      });
    },
    async tick() {
      if (running !== undefined) await running;
      await round();
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
    size: () => book.size(),
  };
}

/** Each source's fresh prices of `tokens`, or why it has none. */
function sample(
  sources: readonly TriggerPriceSource[],
  tokens: readonly string[],
  onError: ((error: unknown, what: string) => void) | undefined,
) {
  return Promise.all(
    sources.map(async (source) => {
      try {
        const prices = await source.prices.pricesOf(tokens, { fresh: true });
        return { source: source.name, prices, problem: undefined };
      } catch (error) {
        if (!(error instanceof UnavailableError)) onError?.(error, `reading ${source.name} prices`);
        const problem = error instanceof UnavailableError ? error.message : "the price source failed";
        return { source: source.name, prices: undefined, problem };
      }
    }),
  );
}
