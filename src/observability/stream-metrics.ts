import { Counter, Gauge, type Registry } from "prom-client";

export interface StreamMetrics {
  /** The counters of one streaming RPC, bound on its first stream and the same ones after. */
  of(rpc: string): {
    opened(): void;
    closed(): void;
    sent(): void;
    slowConsumer(): void;
  };
}

/**
 * Server streams (WatchTokenPrices, WatchAgentEvents): the streams open now, the messages sent
 * (heartbeats included), and the watchers ended because they fell behind their buffer.
 */
export function registerStreamMetrics(registry: Registry): StreamMetrics {
  const open = new Gauge({
    name: "streams_open",
    help: "Server streams open now, by RPC.",
    labelNames: ["rpc"] as const,
    registers: [registry],
  });
  const sent = new Counter({
    name: "stream_messages_sent_total",
    help: "Messages sent on server streams (heartbeats included), by RPC.",
    labelNames: ["rpc"] as const,
    registers: [registry],
  });
  const slow = new Counter({
    name: "stream_slow_consumer_disconnects_total",
    help: "Server streams ended because their reader fell more than STREAM_BUFFER_MESSAGES behind, by RPC.",
    labelNames: ["rpc"] as const,
    registers: [registry],
  });
  // Bound once per RPC (the names are the code's, so this holds a handful): the gauge is set to 0
  // on the first bind only, so that it shows before any stream opened, and moves by inc and dec
  // alone after that. Setting it on every bind would reset it at every stream's opening.
  const bound = new Map<string, ReturnType<StreamMetrics["of"]>>();
  const bind = (rpc: string): ReturnType<StreamMetrics["of"]> => {
    open.set({ rpc }, 0);
    const openChild = open.labels({ rpc });
    const sentChild = sent.labels({ rpc });
    const slowChild = slow.labels({ rpc });
    return {
      opened: () => openChild.inc(),
      closed: () => openChild.dec(),
      sent: () => sentChild.inc(),
      slowConsumer: () => slowChild.inc(),
    };
  };
  return {
    of(rpc) {
      let counters = bound.get(rpc);
      if (counters === undefined) {
        counters = bind(rpc);
        bound.set(rpc, counters);
      }
      return counters;
    },
  };
}
