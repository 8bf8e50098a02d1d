import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { RevocationWatch } from "../auth/revocation-watch.ts";
import type { StreamMetrics } from "../observability/stream-metrics.ts";
import type { StreamSlots } from "../streams/stream-slots.ts";
import {
  createSubscriberQueue,
  IDLE,
  QueueOverflowError,
  type SubscriberQueue,
} from "../streams/subscriber-queue.ts";
import { clientAddressKey } from "./client-address.ts";
import { keyIdKey } from "./principal.ts";

/** What every server stream of the process shares: limits, heartbeats, metrics, shutdown. */
export interface StreamSettings {
  /** A heartbeat message after this long without one (STREAM_HEARTBEAT_MS). */
  readonly heartbeatMs: number;
  /** Messages a stream may have waiting for its reader (STREAM_BUFFER_MESSAGES). */
  readonly bufferMessages: number;
  readonly slots: StreamSlots;
  readonly metrics: StreamMetrics;
  /** Aborts when the server begins to drain: every stream ends with unavailable. */
  readonly shutdown: AbortSignal;
  /** Ends the streams of an API key once it is revoked, with unauthenticated. */
  readonly revocations: RevocationWatch;
}

/** The trailer (gRPC metadata) that carries the cursor a stream ended at. */
export const RESUME_AFTER_HEADER = "x-resume-after";

export interface StreamSpec<T, M> {
  /** The RPC's name in metrics. */
  readonly rpc: string;
  /** Starts feeding `queue`; the returned watch is closed when the stream ends, however it ends. */
  start(queue: SubscriberQueue<T>): Promise<{ close(): void }>;
  message(item: T): M;
  readonly heartbeat: M;
  /** The cursor of an item, when the stream can be resumed after it. */
  cursorOf?(item: T): string;
  /**
   * Opens with a heartbeat, for streams whose first item may be long in coming: the caller (and
   * every proxy on the way) learns at once that the stream is established.
   */
  readonly openWithHeartbeat?: boolean;
}

/**
 * Serves one server stream from a subscriber queue: the caller's stream slot held while it lasts,
 * a heartbeat whenever nothing was sent for `heartbeatMs`, and an end with a code that tells the
 * client what to do: unavailable at shutdown (reconnect, elsewhere), resource_exhausted when it
 * fell behind (resume), unauthenticated when the caller's API key was revoked (a key is checked as
 * the call starts; a stream outlives that check), each with the cursor of the last item sent when
 * there is one.
 */
export async function* serveStream<T, M>(
  settings: StreamSettings,
  ctx: HandlerContext,
  spec: StreamSpec<T, M>,
): AsyncGenerator<M> {
  const keyId = ctx.values.get(keyIdKey);
  const caller = keyId || `address:${ctx.values.get(clientAddressKey)}`;
  const release = settings.slots.acquire(caller);
  const counters = settings.metrics.of(spec.rpc);
  counters.opened();
  const queue = createSubscriberQueue<T>({ capacity: settings.bufferMessages });
  const key = keyId === "" ? undefined : settings.revocations.hold(keyId);
  /** Ends the stream ahead of whatever is still queued for it. */
  const interrupt = key === undefined ? settings.shutdown : AbortSignal.any([settings.shutdown, key.signal]);
  const stop = AbortSignal.any([ctx.signal, interrupt]);
  let watch: { close(): void } | undefined;
  let cursor: string | undefined;
  const resume = () =>
    cursor === undefined
      ? {}
      : { hint: `; resume with after=${cursor}`, metadata: { [RESUME_AFTER_HEADER]: cursor } };
  try {
    watch = await spec.start(queue);
    if (spec.openWithHeartbeat === true) {
      yield spec.heartbeat;
      counters.sent();
    }
    for (;;) {
      let item: T | typeof IDLE;
      try {
        if (interrupt.aborted) throw interrupt.reason;
        item = await queue.take(settings.heartbeatMs, stop);
      } catch (error) {
        if (ctx.signal.aborted) throw ConnectError.from(ctx.signal.reason);
        const { hint = "", metadata } = resume();
        if (settings.shutdown.aborted) {
          throw new ConnectError(`the server is shutting down: reconnect${hint}`, Code.Unavailable, metadata);
        }
        if (key?.signal.aborted === true) {
          throw new ConnectError(
            `the API key of this stream was revoked: reconnect with a valid key${hint}`,
            Code.Unauthenticated,
            metadata,
          );
        }
        if (error instanceof QueueOverflowError) {
          counters.slowConsumer();
          throw new ConnectError(
            `this stream's reader fell more than ${error.capacity} messages behind${hint}`,
            Code.ResourceExhausted,
            metadata,
          );
        }
        throw error;
      }
      if (item === IDLE) {
        yield spec.heartbeat;
      } else {
        yield spec.message(item);
        if (spec.cursorOf !== undefined) cursor = spec.cursorOf(item);
      }
      counters.sent();
    }
  } finally {
    watch?.close();
    key?.close();
    release();
    counters.closed();
  }
}
