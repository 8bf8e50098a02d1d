import { stringifyJsonBigInts } from "../../chain/json-bigints.ts";
import { type AccountEncoding, accountJson, type DataSlice } from "../encoding/account-encoding.ts";
import { createAnswerBudget } from "../rpc/answer-budget.ts";
import type { Commitment } from "../runtime/block-clock.ts";
import type { ChainEvent, ChainEvents } from "../runtime/chain-events.ts";
import type { LocalChain } from "../runtime/local-chain.ts";
import type { RawAccount } from "../runtime/token-accounts.ts";
import { type AccountFilter, passesFilters } from "./pubsub-filters.ts";

/** Where a connection's notifications go (the PubSub port's connection; a test's array). */
export interface NotificationSink {
  send(text: string): void;
}

export type SubscriptionParams =
  | {
      readonly kind: "signature";
      readonly signature: string;
      readonly commitment: Commitment;
      readonly received: boolean;
    }
  | {
      readonly kind: "account";
      readonly address: string;
      readonly commitment: Commitment;
      readonly encoding: AccountEncoding;
      readonly slice: DataSlice | undefined;
    }
  | {
      readonly kind: "program";
      readonly program: string;
      readonly commitment: Commitment;
      readonly encoding: AccountEncoding;
      readonly slice: DataSlice | undefined;
      readonly filters: readonly AccountFilter[];
    }
  /** `mentions` undefined: every transaction ("all" and "allWithVotes": the local chain has no votes). */
  | { readonly kind: "logs"; readonly mentions: string | undefined; readonly commitment: Commitment }
  | { readonly kind: "slot" }
  | { readonly kind: "root" };

type Subscription = SubscriptionParams & {
  readonly id: number;
  readonly sink: NotificationSink;
  /** The remote address of the client that holds it; undefined for the service's own. */
  readonly holder: string | undefined;
  /** A program subscription's filters as text: subscribers with the same filters are checked once per write. */
  readonly filterKey?: string;
};

const noop = () => {};

export interface PubSubSubscriptions {
  /**
   * Adds a subscription of `sink`, held by a client at `address` (undefined: the service's own);
   * returns its id (ids are unique across the chain, from 0, as Agave's).
   */
  subscribe(sink: NotificationSink, params: SubscriptionParams, address?: string): number;
  /** Removes one of `sink`'s subscriptions; false when it has none by that id. */
  unsubscribe(sink: NotificationSink, id: number): boolean;
  /** How many subscriptions `sink` holds. */
  countOf(sink: NotificationSink): number;
  /** How many subscriptions the clients at `address` hold together. */
  countOfAddress(address: string): number;
  /** Subscriptions held by clients with an address: all but the service's own. */
  readonly publicSize: number;
  /** Removes every subscription of a sink that went away. */
  drop(sink: NotificationSink): void;
  readonly size: number;
  /** Notifications waiting for their slot to reach their commitment (finalized ones). */
  readonly waiting: number;
  close(): void;
}

/** Agave's base58 limit on account data, and what its notifications carry past it. */
const MAX_BASE58_BYTES = 128;
const BASE58_TOO_LARGE = "error: data too large for bs58 encoding";
/**
 * Notifications kept waiting for their commitment at most, and the account bytes they hold (each
 * keeps the account as its write left it); past either the oldest go, and are counted.
 */
const MAX_WAITING = 100_000;
const MAX_WAITING_BYTES = 64 * 1024 * 1024;
/**
 * How long one turn of sending notifications may hold the chain's thread before it yields to the
 * chain's other work (its RPC port, the next write): 10,000 subscribers of one program are told
 * over many turns, not inside the write that woke them.
 */
const SEND_SLICE_MS = 5;
/** What a closed account looks like in a notification (Agave sends the default account). */
const CLOSED: RawAccount = {
  lamports: 0n,
  programAddress: "11111111111111111111111111111111",
  executable: false,
  data: new Uint8Array(),
} as unknown as RawAccount;

/**
 * Solana's PubSub subscriptions on the local chain, with Agave's notifications and their
 * semantics per commitment, driven by the chain's own events (../runtime/chain-events.ts): a transaction
 * that lands is told at once to processed and confirmed subscribers and waits, with the
 * accounts as it left them, until its slot is finalized for finalized ones; a signature
 * subscription ends with its notification; slots and roots are told as the chain produces
 * them. While anything is subscribed the chain produces its slots on time (one every `slotMs`),
 * as a validator does, so that finality comes without anyone calling the RPC port.
 */
export function createPubSubSubscriptions(options: {
  readonly chain: LocalChain;
  readonly events: ChainEvents;
  readonly slotMs: number;
  /** Largest notification built (account data); a larger one is not sent. */
  readonly maxNotificationBytes: number;
  /** Told of what was not delivered: `notification_too_large`, `waiting_limit`. */
  readonly onDropped?: (reason: string) => void;
}): PubSubSubscriptions {
  const { chain, maxNotificationBytes } = options;
  const dropped = options.onDropped ?? (() => {});
  let nextId = 0;
  const byId = new Map<number, Subscription>();
  const bySink = new Map<NotificationSink, Set<number>>();
  /** Subscriptions held per remote address (the service's own are in none). */
  const byAddress = new Map<string, number>();
  let publicSize = 0;
  const bySignature = new Map<string, Set<Subscription>>();
  const byAccount = new Map<string, Set<Subscription>>();
  const byProgram = new Map<string, Set<Subscription>>();
  const byMention = new Map<string, Set<Subscription>>();
  const allLogs = new Set<Subscription>();
  const slots = new Set<Subscription>();
  const roots = new Set<Subscription>();
  /** Deliveries waiting for their slot to reach their commitment, in the order they arose. */
  let waiting: { slot: number; commitment: Commitment; deliver: () => void; bytes: number }[] = [];
  let waitingBytes = 0;
  let lastRoot = chain.slot("finalized");
  let ticker: NodeJS.Timeout | undefined;
  /** Sends not yet made, in the order they arose (`sent` of them are done). */
  let outbox: (() => void)[] = [];
  let sent = 0;
  let draining: NodeJS.Immediate | undefined;
  const drain = () => {
    draining = undefined;
    const until = performance.now() + SEND_SLICE_MS;
    let turn = 0;
    while (sent < outbox.length) {
      const send = outbox[sent] as () => void;
      outbox[sent++] = noop;
      send();
      if (++turn % 64 === 0 && performance.now() > until) break;
    }
    if (sent < outbox.length) {
      draining = setImmediate(drain);
    } else {
      outbox = [];
      sent = 0;
    }
  };
  /** Does `send` after the write that called for it, in order with every other send. */
  const later = (send: () => void) => {
    outbox.push(send);
    draining ??= setImmediate(drain);
  };

  const add = <K>(index: Map<K, Set<Subscription>>, key: K, sub: Subscription) => {
    const set = index.get(key) ?? new Set<Subscription>();
    index.set(key, set);
    set.add(sub);
  };
  const remove = <K>(index: Map<K, Set<Subscription>>, key: K, sub: Subscription) => {
    const set = index.get(key);
    set?.delete(sub);
    if (set?.size === 0) index.delete(key);
  };
  const indexOf = (sub: Subscription): [Map<string, Set<Subscription>>, string] | Set<Subscription> => {
    switch (sub.kind) {
      case "signature":
        return [bySignature, sub.signature];
      case "account":
        return [byAccount, sub.address];
      case "program":
        return [byProgram, sub.program];
      case "logs":
        return sub.mentions === undefined ? allLogs : [byMention, sub.mentions];
      case "slot":
        return slots;
      case "root":
        return roots;
    }
  };
  const live = (sub: Subscription) => byId.get(sub.id) === sub;

  const end = (sub: Subscription) => {
    byId.delete(sub.id);
    if (sub.holder !== undefined) {
      const held = (byAddress.get(sub.holder) ?? 1) - 1;
      if (held === 0) byAddress.delete(sub.holder);
      else byAddress.set(sub.holder, held);
      publicSize--;
    }
    bySink.get(sub.sink)?.delete(sub.id);
    const index = indexOf(sub);
    if (index instanceof Set) index.delete(sub);
    else remove(index[0], index[1], sub);
    if (byId.size === 0) stopTicking();
  };

  const notify = (sub: Subscription, method: string, result: string) => {
    later(() => send(sub, method, result));
  };
  const send = (sub: Subscription, method: string, result: string) => {
    sub.sink.send(
      `{"jsonrpc":"2.0","method":"${method}","params":{"result":${result},"subscription":${sub.id}}}`,
    );
  };
  const withSlot = (slot: number, value: string) => `{"context":{"slot":${slot}},"value":${value}}`;

  /** Runs `deliver` now if `slot` is seen at `commitment`, else once it is. */
  const at = (slot: number, commitment: Commitment, deliver: () => void, bytes = 0) => {
    if (slot <= chain.slot(commitment)) {
      deliver();
      return;
    }
    waiting.push({ slot, commitment, deliver, bytes });
    waitingBytes += bytes;
    while (waiting.length > MAX_WAITING || waitingBytes > MAX_WAITING_BYTES) {
      waitingBytes -= (waiting.shift() as { bytes: number }).bytes;
      dropped("waiting_limit");
    }
  };

  const signatureResult = (err: unknown) => `{"err":${stringifyJsonBigInts(err ?? null)}}`;
  const notifySignature = (sub: Subscription & { kind: "signature" }, slot: number, err: unknown) => {
    if (!live(sub)) return;
    // A signature subscription ends with its notification, as Agave's does.
    end(sub);
    notify(sub, "signatureNotification", withSlot(slot, signatureResult(err)));
  };

  const accountValue = (
    sub: { encoding: AccountEncoding; slice: DataSlice | undefined },
    account: RawAccount,
  ): string | undefined => {
    try {
      const budget = createAnswerBudget({
        bytes: maxNotificationBytes,
        maxAnswerBytes: maxNotificationBytes,
      });
      const { encoding, slice } = sub;
      const length =
        slice === undefined
          ? account.data.length
          : Math.max(0, Math.min(slice.length, account.data.length - slice.offset));
      if ((encoding === "binary" || encoding === "base58") && length > MAX_BASE58_BYTES) {
        // What Agave's account encoder puts in place of data base58 would take too long for;
        // getAccountInfo refuses the request instead, but a notification has no one to refuse.
        const json = accountJson(account, "base64", { offset: 0, length: 0 }, chain.account, budget);
        const data = encoding === "binary" ? BASE58_TOO_LARGE : [BASE58_TOO_LARGE, "base58"];
        return stringifyJsonBigInts({ ...json, data });
      }
      return stringifyJsonBigInts(accountJson(account, encoding, slice, chain.account, budget));
    } catch {
      // Past the bound on a notification's size: not sent (the RPC port would refuse the read too).
      dropped("notification_too_large");
      return undefined;
    }
  };

  /**
   * Tells an account or a program subscriber of an account as a write left it, once `slot` reaches
   * the subscriber's commitment: accountNotification and programNotification carry the same
   * encoded account (a program's wrapped with its address by `wrap`), waited for and dropped alike.
   * The result is encoded when it is sent, once per encoding and data slice of this write
   * (`results`): every subscriber asking alike shares it, as Agave's subscribers of one
   * (filter, encoding, commitment) share one notification.
   */
  const notifyAccount = (
    sub: Subscription & { kind: "account" | "program" },
    slot: number,
    state: RawAccount,
    method: "accountNotification" | "programNotification",
    wrap: (value: string) => string,
    results: Map<string, string | undefined>,
  ) => {
    at(
      slot,
      sub.commitment,
      () =>
        later(() => {
          if (!live(sub)) return;
          const key = `${sub.encoding}:${sub.slice?.offset}:${sub.slice?.length}`;
          let result = results.get(key);
          if (result === undefined && !results.has(key)) {
            const value = accountValue(sub, state);
            result = value === undefined ? undefined : withSlot(slot, wrap(value));
            results.set(key, result);
          }
          if (result !== undefined) send(sub, method, result);
        }),
      state.data.length,
    );
  };

  const accountChanged = (address: string, slot: number) => {
    const accountSubs = byAccount.get(address);
    // Every transaction passes here: read nothing from LiteSVM unless someone may be told.
    if (accountSubs === undefined && byProgram.size === 0) return;
    const account = chain.account(address);
    const owner = account?.programAddress as string | undefined;
    const programSubs = owner === undefined ? undefined : byProgram.get(owner);
    if (accountSubs === undefined && programSubs === undefined) return;
    // The account as this write left it: a finalized subscriber hears of this state, later.
    const state = account ?? CLOSED;
    const accountResults = new Map<string, string | undefined>();
    for (const sub of accountSubs ?? []) {
      if (sub.kind !== "account") continue;
      notifyAccount(sub, slot, state, "accountNotification", (value) => value, accountResults);
    }
    if (account === undefined) return;
    const programResults = new Map<string, string | undefined>();
    const wrap = (value: string) => `{"pubkey":"${address}","account":${value}}`;
    // Identical filters (10,000 wallets' `programSubscribe(Token)`) are checked once.
    const passes = new Map<string | undefined, boolean>();
    for (const sub of programSubs ?? []) {
      if (sub.kind !== "program") continue;
      let pass = passes.get(sub.filterKey);
      if (pass === undefined) {
        pass = passesFilters(account.data as Uint8Array, sub.filters);
        passes.set(sub.filterKey, pass);
      }
      if (pass) notifyAccount(sub, slot, state, "programNotification", wrap, programResults);
    }
  };

  const landed = (event: ChainEvent & { kind: "transaction" }) => {
    const { entry } = event;
    for (const sub of bySignature.get(entry.signature) ?? []) {
      if (sub.kind === "signature")
        at(entry.slot, sub.commitment, () => notifySignature(sub, entry.slot, entry.err));
    }
    for (const address of event.written) accountChanged(address, entry.slot);
    if (allLogs.size === 0 && byMention.size === 0) return;
    const logSubs = [...allLogs];
    for (const address of new Set(entry.accounts)) logSubs.push(...(byMention.get(address) ?? []));
    if (logSubs.length === 0) return;
    const value = withSlot(
      entry.slot,
      `{"signature":"${entry.signature}","err":${stringifyJsonBigInts(entry.err ?? null)},"logs":${JSON.stringify(event.logs)}}`,
    );
    for (const sub of logSubs) {
      if (sub.kind !== "logs") continue;
      at(
        entry.slot,
        sub.commitment,
        () => {
          if (live(sub)) notify(sub, "logsNotification", value);
        },
        value.length,
      );
    }
  };

  const slotProduced = (slot: number) => {
    if (slots.size > 0) {
      const root = chain.slot("finalized");
      const result = `{"parent":${Math.max(0, slot - 1)},"root":${root},"slot":${slot}}`;
      for (const sub of slots) notify(sub, "slotNotification", result);
    }
    const root = chain.slot("finalized");
    if (root !== lastRoot) {
      lastRoot = root;
      for (const sub of roots) notify(sub, "rootNotification", String(root));
    }
    if (waiting.length === 0) return;
    const due = waiting.filter((w) => w.slot <= chain.slot(w.commitment));
    if (due.length === 0) return;
    waiting = waiting.filter((w) => w.slot > chain.slot(w.commitment));
    waitingBytes = waiting.reduce((sum, w) => sum + w.bytes, 0);
    for (const w of due) w.deliver();
  };

  const unlisten = options.events.listen((event) => {
    switch (event.kind) {
      case "slot":
        slotProduced(event.slot);
        return;
      case "received":
        for (const sub of bySignature.get(event.signature) ?? []) {
          if (sub.kind === "signature" && sub.received) {
            notify(sub, "signatureNotification", withSlot(chain.slot("processed"), '"receivedSignature"'));
          }
        }
        return;
      case "transaction":
        landed(event);
        return;
      case "account":
        accountChanged(event.address, event.slot);
        return;
    }
  });

  const startTicking = () => {
    if (ticker !== undefined) return;
    // The chain produces its slots when asked; with subscribers, it is asked on time, as a
    // validator produces blocks whether or not anyone calls its RPC port.
    ticker = setInterval(() => chain.tick(), options.slotMs);
    ticker.unref();
  };
  const stopTicking = () => {
    if (ticker === undefined) return;
    clearInterval(ticker);
    ticker = undefined;
  };

  return {
    subscribe(sink, params, address) {
      const sub = {
        ...params,
        id: nextId++,
        sink,
        holder: address,
        ...(params.kind === "program" ? { filterKey: filterKeyOf(params.filters) } : {}),
      } as Subscription;
      byId.set(sub.id, sub);
      if (address !== undefined) {
        byAddress.set(address, (byAddress.get(address) ?? 0) + 1);
        publicSize++;
      }
      const own = bySink.get(sink) ?? new Set<number>();
      bySink.set(sink, own);
      own.add(sub.id);
      const index = indexOf(sub);
      if (index instanceof Set) index.add(sub);
      else add(index[0], index[1], sub);
      startTicking();
      if (sub.kind === "signature") {
        // Already landed (the local chain runs a transaction as it is sent, so a client that
        // subscribes after sending is usual): told as soon as its commitment sees it.
        const entry = chain.ledger.get(sub.signature);
        if (entry !== undefined)
          at(entry.slot, sub.commitment, () => notifySignature(sub, entry.slot, entry.err));
      }
      return sub.id;
    },
    unsubscribe(sink, id) {
      const sub = byId.get(id);
      if (sub === undefined || sub.sink !== sink) return false;
      end(sub);
      return true;
    },
    countOf: (sink) => bySink.get(sink)?.size ?? 0,
    countOfAddress: (address) => byAddress.get(address) ?? 0,
    get publicSize() {
      return publicSize;
    },
    drop(sink) {
      for (const id of bySink.get(sink) ?? []) {
        const sub = byId.get(id);
        if (sub !== undefined) end(sub);
      }
      bySink.delete(sink);
    },
    get size() {
      return byId.size;
    },
    get waiting() {
      return waiting.length;
    },
    close() {
      unlisten();
      stopTicking();
      if (draining !== undefined) clearImmediate(draining);
      outbox = [];
      sent = 0;
    },
  };
}

/** Filters as text, the same for the same filters however they were written (base58 or base64). */
function filterKeyOf(filters: readonly AccountFilter[]): string {
  return filters
    .map((f) =>
      f.kind === "dataSize" ? `s${f.size}` : `m${f.offset}:${Buffer.from(f.bytes).toString("hex")}`,
    )
    .join(",");
}
