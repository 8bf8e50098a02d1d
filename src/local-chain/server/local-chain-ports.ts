import type { LocalChainPortLimits, LocalChainPubSubLimits } from "../../config.ts";
import { type PubSubServer, startPubSubServer } from "../pubsub/pubsub-server.ts";
import type { PubSubSubscriptions } from "../pubsub/pubsub-subscriptions.ts";
import type { JsonRpcHandler } from "../rpc/json-rpc-handler.ts";
import { type LocalChainServer, startLocalChainServer } from "./local-chain-server.ts";

export interface LocalChainPorts {
  readonly rpc: LocalChainServer;
  readonly pubsub: PubSubServer;
  close(): Promise<void>;
}

/** Tries at finding two free neighbouring ports when any port will do. */
const PAIR_ATTEMPTS = 20;

/**
 * The JSON-RPC port and, on the port after it, the PubSub port: clients find PubSub there
 * without being told (web3.js's Connection and Solana's CLI derive it as the RPC port + 1). With
 * port 0, a free port is taken whose next port is free as well.
 */
export async function startLocalChainPorts(options: {
  readonly port: number;
  readonly handler: JsonRpcHandler;
  readonly pubsubHandler: JsonRpcHandler;
  readonly subscriptions: PubSubSubscriptions;
  readonly maxRequestBytes: number;
  readonly limits: Omit<LocalChainPortLimits, "maxAnswerBytes" | "maxRequestMs">;
  readonly pubsubLimits: LocalChainPubSubLimits;
  readonly allowedHosts?: readonly string[];
  readonly allowedOrigins?: readonly string[];
  /** The service's own PubSub path's secret (see ../pubsub/pubsub-server.ts). */
  readonly pubsubServiceToken?: string;
  readonly onRejected?: (reason: string) => void;
  readonly onUnexpected?: (error: unknown, method: string) => void;
}): Promise<LocalChainPorts> {
  const { onRejected } = options;
  const shared = {
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
    ...(options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins }),
    ...(options.onUnexpected === undefined ? {} : { onUnexpected: options.onUnexpected }),
  };
  for (let attempt = 1; ; attempt++) {
    const rpc = await startLocalChainServer({
      handler: options.handler,
      port: options.port,
      maxRequestBytes: options.maxRequestBytes,
      limits: options.limits,
      ...shared,
      ...(onRejected === undefined ? {} : { onRejected }),
    });
    try {
      const pubsub = await startPubSubServer({
        handler: options.pubsubHandler,
        subscriptions: options.subscriptions,
        port: rpc.port + 1,
        limits: options.pubsubLimits,
        ...shared,
        ...(options.pubsubServiceToken === undefined ? {} : { serviceToken: options.pubsubServiceToken }),
        ...(onRejected === undefined ? {} : { onRejected: (reason) => onRejected(`pubsub_${reason}`) }),
      });
      return {
        rpc,
        pubsub,
        close: async () => {
          await Promise.all([rpc.close(), pubsub.close()]);
        },
      };
    } catch (error) {
      await rpc.close();
      const inUse = (error as NodeJS.ErrnoException).code === "EADDRINUSE";
      if (!inUse || options.port !== 0 || attempt >= PAIR_ATTEMPTS) throw error;
    }
  }
}
