import { Counter, Gauge, type Registry } from "prom-client";

export interface StreamMetrics {
  /** The counters of one streaming RPC, bound once (messages are counted on every send). */
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
  // Bound once per RPC: every stream of an RPC counts on the same children. The gauge starts at 0
  // once, so that it shows before the first stream opens; setting it again for each stream would
  // wipe the count of the streams already open (and send it below 0 as they close).
  const bound = new Map<string, ReturnType<StreamMetrics["of"]>>();
  return {
    of(rpc) {
      let counters = bound.get(rpc);
      if (counters === undefined) {
        open.set({ rpc }, 0);
        const openChild = open.labels({ rpc });
        const sentChild = sent.labels({ rpc });
        const slowChild = slow.labels({ rpc });
        counters = {
          opened: () => openChild.inc(),
          closed: () => openChild.dec(),
          sent: () => sentChild.inc(),
          slowConsumer: () => slowChild.inc(),
        };
        bound.set(rpc, counters);
      }
      return counters;
    },
  };
}
