import type { WebhookDeliverer } from "./webhook-deliverer.ts";
import type { WebhookFanout } from "./webhook-fanout.ts";

export interface WebhookLoop {
  start(): void;
  /** Looks for work now (a new event, a free place), not at the next tick. */
  kick(): void;
  /** Stops taking work and waits up to `timeoutMs` for the attempts in flight. */
  stop(timeoutMs: number): Promise<void>;
  /** For leak checks: whether the poll timer exists, and the attempts in flight. */
  stats(): { timer: boolean; inFlight: number };
}

/**
 * Runs the outbox in one process: every `pollIntervalMs` (and at once after a fan-out found
 * something, so a delivery waits for no second tick), new events become deliveries and due
 * deliveries are attempted. A failed round is reported and the next one tries again: the outbox
 * is durable, so nothing is lost while the database is away.
 */
export function createWebhookLoop(options: {
  readonly fanout: WebhookFanout;
  readonly deliverer: WebhookDeliverer;
  readonly pollIntervalMs: number;
  readonly onError?: (error: unknown) => void;
}): WebhookLoop {
  const { fanout, deliverer } = options;
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> | undefined;
  let again = false;
  let stopped = true;

  const runRound = async () => {
    for (let pages = 0; pages < MAX_PAGES_PER_ROUND; pages++) {
      const { fresh, more } = await fanout.step();
      // What this process just enqueued goes out at once; then whatever else is due.
      await deliverer.offer(fresh);
      await deliverer.step();
      if (!more) break;
    }
  };
  const tick = () => {
    if (stopped) return;
    if (round !== undefined) {
      again = true;
      return;
    }
    round = runRound()
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        round = undefined;
        if (again) {
          again = false;
          tick();
        }
      });
  };
  return {
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(tick, options.pollIntervalMs);
      timer.unref();
      tick();
    },
    kick: tick,
    async stop(timeoutMs) {
      stopped = true;
      clearInterval(timer);
      timer = undefined;
      let waiting: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([round, deliverer.drain()]),
        new Promise<void>((resolve) => {
          waiting = setTimeout(resolve, timeoutMs);
        }),
      ]);
      clearTimeout(waiting);
    },
    stats: () => ({ timer: timer !== undefined, inFlight: deliverer.inFlight() }),
  };
}

/** Fan-out pages one round takes before due deliveries get their turn again. */
const MAX_PAGES_PER_ROUND = 10;
