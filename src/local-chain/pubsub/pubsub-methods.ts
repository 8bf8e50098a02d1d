import { getBase58Encoder } from "@solana/kit";
import { isBase58Address } from "../../chain/base58-address.ts";
import { dataSliceOf, encodingOf } from "../encoding/account-encoding.ts";
import { INTERNAL_ERROR, INVALID_PARAMS, JsonRpcError, paramError } from "../rpc/json-rpc-error.ts";
import type { RpcCaller, RpcMethod } from "../rpc/json-rpc-handler.ts";
import {
  booleanOf,
  commitmentOf,
  configParam,
  invalidType,
  requireParams,
  u64Param,
} from "../rpc/rpc-params.ts";
import { accountFiltersOf } from "./pubsub-filters.ts";
import type { NotificationSink, PubSubSubscriptions, SubscriptionParams } from "./pubsub-subscriptions.ts";

/** A PubSub caller: its connection, whose subscriptions the methods add and remove. */
export interface PubSubCaller extends RpcCaller {
  readonly sink: NotificationSink;
}

/** How many positional params each PubSub method takes, at least and at most (Agave's signatures). */
export const PUBSUB_PARAM_COUNTS: Readonly<Record<string, readonly [number, number]>> = {
  accountSubscribe: [1, 2],
  programSubscribe: [1, 2],
  logsSubscribe: [1, 2],
  signatureSubscribe: [1, 2],
  slotSubscribe: [0, 0],
  rootSubscribe: [0, 0],
  accountUnsubscribe: [1, 1],
  programUnsubscribe: [1, 1],
  logsUnsubscribe: [1, 1],
  signatureUnsubscribe: [1, 1],
  slotUnsubscribe: [1, 1],
  rootUnsubscribe: [1, 1],
};

/**
 * The PubSub methods, with Agave's params and refusals (rpc_pubsub.rs): a bad key or signature is
 * -32602 "Invalid Request: Invalid pubkey provided", an unknown subscription id -32602 "Invalid
 * subscription id.", a subscription past the bound -32603 as Agave refuses one past its node's
 * limit. `onRefused` hears of those past the bound.
 */
export function pubsubMethods(options: {
  readonly subscriptions: PubSubSubscriptions;
  readonly maxSubscriptionsPerConnection: number;
  /**
   * Subscriptions of all clients' connections together (LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS);
   * absent: no bound. The service's own (a caller without an address) are not counted in it.
   */
  readonly maxSubscriptions?: number;
  /**
   * Subscriptions the connections of one remote address may hold together
   * (LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS); absent: no bound. Not the service's own.
   */
  readonly maxSubscriptionsPerAddress?: number;
  readonly onRefused?: (
    reason: "subscription_limit" | "address_subscription_limit" | "node_subscription_limit",
  ) => void;
}): Record<string, RpcMethod> {
  const { subscriptions, maxSubscriptionsPerConnection } = options;
  const maxSubscriptions = options.maxSubscriptions ?? Number.POSITIVE_INFINITY;
  const maxPerAddress = options.maxSubscriptionsPerAddress ?? Number.POSITIVE_INFINITY;
  const refused = options.onRefused ?? (() => {});
  const sinkOf = (caller: RpcCaller) => (caller as PubSubCaller).sink;
  const subscribe = (caller: RpcCaller, params: SubscriptionParams) => {
    const sink = sinkOf(caller);
    if (subscriptions.countOf(sink) >= maxSubscriptionsPerConnection) {
      refused("subscription_limit");
      throw new JsonRpcError(
        INTERNAL_ERROR,
        `Internal Error: Subscription refused. Connection subscription limit reached (at most ${maxSubscriptionsPerConnection} subscriptions per connection: unsubscribe, or open another connection)`,
      );
    }
    const address = caller.address;
    // The service's own watch (no address: its own path, see pubsub-server.ts) is outside the
    // clients' caps, so that clients holding them cannot turn it away.
    if (address === undefined) return subscriptions.subscribe(sink, params);
    const held = subscriptions.countOfAddress(address);
    if (held >= maxPerAddress) {
      refused("address_subscription_limit");
      throw new JsonRpcError(
        INTERNAL_ERROR,
        `Internal Error: Subscription refused. Address subscription limit reached (the connections from ${address} hold ${held} subscriptions, at most ${maxPerAddress} per address, LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS_PER_ADDRESS, of the ${maxSubscriptions} on this chain: unsubscribe first)`,
      );
    }
    if (subscriptions.publicSize >= maxSubscriptions) {
      // Agave's words past its node's bound (max_active_subscriptions), and what to do about it.
      refused("node_subscription_limit");
      throw new JsonRpcError(
        INTERNAL_ERROR,
        `Internal Error: Subscription refused. Node subscription limit reached (at most ${maxSubscriptions} subscriptions on this chain, LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS: unsubscribe first)`,
      );
    }
    return subscriptions.subscribe(sink, params, address);
  };
  const unsubscribe: RpcMethod = (params, _answer, caller) => {
    requireParams(params, 1);
    const id = u64Param(params[0]);
    if (id > BigInt(Number.MAX_SAFE_INTEGER) || !subscriptions.unsubscribe(sinkOf(caller), Number(id))) {
      throw new JsonRpcError(INVALID_PARAMS, "Invalid subscription id.");
    }
    return true;
  };
  const account = (params: readonly unknown[]) => {
    const config = configParam(params, 1);
    return {
      commitment: commitmentOf(config),
      encoding: encodingOf(config, "binary"),
      slice: dataSliceOf(config),
    };
  };

  return {
    accountSubscribe(params, _answer, caller) {
      requireParams(params, 1);
      const address = pubkey(params[0], "pubkey");
      return subscribe(caller, { kind: "account", address, ...account(params) });
    },
    programSubscribe(params, _answer, caller) {
      requireParams(params, 1);
      const program = pubkey(params[0], "pubkey");
      const filters = accountFiltersOf(configParam(params, 1).filters);
      return subscribe(caller, { kind: "program", program, filters, ...account(params) });
    },
    logsSubscribe(params, _answer, caller) {
      requireParams(params, 1);
      const commitment = commitmentOf(configParam(params, 1));
      return subscribe(caller, { kind: "logs", mentions: logsFilter(params[0]), commitment });
    },
    signatureSubscribe(params, _answer, caller) {
      requireParams(params, 1);
      const signature = signatureOf(params[0]);
      const config = configParam(params, 1);
      return subscribe(caller, {
        kind: "signature",
        signature,
        commitment: commitmentOf(config),
        received: booleanOf(config, "enableReceivedNotification", false),
      });
    },
    slotSubscribe: (_params, _answer, caller) => subscribe(caller, { kind: "slot" }),
    rootSubscribe: (_params, _answer, caller) => subscribe(caller, { kind: "root" }),
    accountUnsubscribe: unsubscribe,
    programUnsubscribe: unsubscribe,
    logsUnsubscribe: unsubscribe,
    signatureUnsubscribe: unsubscribe,
    slotUnsubscribe: unsubscribe,
    rootUnsubscribe: unsubscribe,
  };
}

/** A public key as Agave's PubSub reads one (`param::<Pubkey>`): its own refusal, not the RPC port's. */
function pubkey(value: unknown, thing: string): string {
  if (typeof value !== "string") throw invalidType(value, "a string");
  if (value.length <= 44 && isBase58Address(value)) return value;
  throw paramError(`Invalid Request: Invalid ${thing} provided`);
}

function signatureOf(value: unknown): string {
  if (typeof value !== "string") throw invalidType(value, "a string");
  // Bounded before decoding: base58 decodes in time quadratic in its length.
  if (value.length <= 88 && /^[1-9A-HJ-NP-Za-km-z]+$/.test(value)) {
    try {
      if (getBase58Encoder().encode(value).length === 64) return value;
    } catch {
      // Not base58: refused below.
    }
  }
  throw paramError("Invalid Request: Invalid signature provided");
}

/** logsSubscribe's filter: "all", "allWithVotes" or `{mentions: [one address]}` (undefined: all). */
function logsFilter(value: unknown): string | undefined {
  if (value === "all" || value === "allWithVotes") return undefined;
  if (typeof value === "string") {
    throw new JsonRpcError(
      INVALID_PARAMS,
      `Invalid params: unknown variant \`${value.slice(0, 64)}\`, expected one of \`all\`, \`allWithVotes\`, \`mentions\`.`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidType(value, "enum RpcTransactionLogsFilter");
  }
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== "mentions") {
    throw new JsonRpcError(
      INVALID_PARAMS,
      `Invalid params: unknown variant \`${(keys[0] ?? "").slice(0, 64)}\`, expected one of \`all\`, \`allWithVotes\`, \`mentions\`.`,
    );
  }
  const mentions = (value as { mentions: unknown }).mentions;
  if (!Array.isArray(mentions)) throw invalidType(mentions, "a sequence");
  if (mentions.length !== 1) throw paramError("Invalid Request: Only 1 address supported");
  return pubkey(mentions[0], "mentions");
}
