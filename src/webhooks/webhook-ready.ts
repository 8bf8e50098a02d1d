/**
 * Deliveries to attempt next: those just enqueued here, and those the last look at the outbox
 * found due, by owner, each owner's oldest first. An attempt that ends takes the next one from
 * here, so a busy process asks the store what is due once per `concurrency` attempts, not once
 * per attempt. A candidate that moved on meanwhile (another replica attempted it) is simply not
 * claimed. The owners are a round: the one served goes to the back, so each owner with work
 * gets a place in turn, however much work another one has waiting. Each owner keeps at most
 * `maxReadyPerOwner` here, so that one owner's backlog leaves room for the others' work.
 */
import type { DeliveryRecord } from "./webhook-store.ts";

export interface WebhookReadyOptions {
  readonly concurrency: number;
  readonly maxInFlightPerEndpoint: number;
  readonly maxInFlightPerOwner: number;
  /** The attempts in flight, by delivery id. */
  readonly running: ReadonlyMap<string, unknown>;
  /** Attempts in flight by endpoint and by owner. */
  readonly perEndpoint: ReadonlyMap<string, number>;
  readonly perOwner: ReadonlyMap<string, number>;
}

export interface WebhookReady {
  /** Adds candidates, up to the bounds; those in flight or here already are passed over. */
  add(deliveries: readonly DeliveryRecord[]): void;
  /** The candidates waiting here. */
  count(): number;
  /** The owners with candidates waiting here. */
  owners(): number;
  /**
   * The next owner's oldest candidate that may start now (its owner and endpoint have room); the
   * owner goes to the back of the round. `waiting`: the owner still has candidates here.
   */
  takeFromNextOwner(): { readonly delivery: DeliveryRecord | undefined; readonly waiting: boolean };
  /**
   * Owners the outbox need not be asked about now: those with every place they may take in use,
   * or with candidates enough waiting here. Their due deliveries would fill a look at the outbox
   * (the longest waiting come first) and leave the other owners' work unseen.
   */
  saturated(): string[];
}

export function createWebhookReady(options: WebhookReadyOptions): WebhookReady {
  const { running, perEndpoint, perOwner } = options;
  const ready = new Map<string, Map<string, DeliveryRecord>>();
  let readyCount = 0;
  const maxReady = options.concurrency * 8;
  const maxReadyPerOwner = options.maxInFlightPerOwner * 4;
  /** Takes `owner`'s oldest candidate that may start now (its owner and endpoint have room). */
  const take = (owner: string, candidates: Map<string, DeliveryRecord>): DeliveryRecord | undefined => {
    if ((perOwner.get(owner) ?? 0) >= options.maxInFlightPerOwner) return undefined;
    for (const [id, delivery] of candidates) {
      if (running.has(id)) {
        candidates.delete(id);
        readyCount--;
        continue;
      }
      if ((perEndpoint.get(delivery.endpointId) ?? 0) >= options.maxInFlightPerEndpoint) continue;
      candidates.delete(id);
      readyCount--;
      return delivery;
    }
    return undefined;
  };
  const add = (deliveries: readonly DeliveryRecord[]) => {
    for (const d of deliveries) {
      if (readyCount >= maxReady) break;
      if (running.has(d.deliveryId)) continue;
      let candidates = ready.get(d.owner);
      if (candidates?.has(d.deliveryId) === true || (candidates?.size ?? 0) >= maxReadyPerOwner) continue;
      if (candidates === undefined) {
        candidates = new Map();
        ready.set(d.owner, candidates);
      }
      candidates.set(d.deliveryId, d);
      readyCount++;
    }
  };
  return {
    add,
    count: () => readyCount,
    owners: () => ready.size,
    takeFromNextOwner() {
      const [owner, candidates] = ready.entries().next().value as [string, Map<string, DeliveryRecord>];
      ready.delete(owner);
      const delivery = take(owner, candidates);
      if (candidates.size > 0) ready.set(owner, candidates);
      return { delivery, waiting: candidates.size > 0 };
    },
    saturated: () => {
      const owners = new Set<string>();
      for (const [owner, count] of perOwner) if (count >= options.maxInFlightPerOwner) owners.add(owner);
      for (const [owner, candidates] of ready) if (candidates.size >= maxReadyPerOwner) owners.add(owner);
      return [...owners];
    },
  };
}
