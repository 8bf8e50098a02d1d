import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface ReceivedWebhook {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly path: string;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  /** Every request, in arrival order. */
  readonly received: ReceivedWebhook[];
  /** How the next requests are answered: a status, or a function of the request (undefined: hold it open). */
  answer: (
    request: ReceivedWebhook,
    index: number,
  ) => number | { status: number; headers: Record<string, string> } | undefined;
  /** Resolves when `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Deliveries at once, retries within milliseconds, receivers on loopback over http. */
export const FAST_WEBHOOKS = {
  WEBHOOKS_ENABLED: "true",
  WEBHOOK_ALLOW_HTTP: "true",
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  WEBHOOK_POLL_INTERVAL_MS: "20",
  EVENT_POLL_INTERVAL_MS: "20",
  WEBHOOK_RETRY_BASE_MS: "10",
  WEBHOOK_RETRY_MAX_MS: "40",
  WEBHOOK_TIMEOUT_MS: "2000",
  WEBHOOK_MAX_ENDPOINTS_PER_OWNER: "100",
};

/** A webhook receiver on a real loopback socket that records what arrives and answers as told (200 by default). */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const waiters = new Set<() => void>();
  const held: ServerResponse[] = [];
  const receiver: WebhookReceiver = {
    url: "",
    port: 0,
    received,
    answer: () => 200,
    waitFor(count, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (received.length >= count) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${received.length} webhooks arrived, waited for ${count}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        for (const res of held) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const hook: ReceivedWebhook = {
        id: String(req.headers["webhook-id"] ?? ""),
        timestamp: String(req.headers["webhook-timestamp"] ?? ""),
        signature: String(req.headers["webhook-signature"] ?? ""),
        headers: req.headers,
        body,
        path: req.url ?? "",
      };
      received.push(hook);
      const answer = receiver.answer(hook, received.length - 1);
      if (answer === undefined) {
        held.push(res);
      } else if (typeof answer === "number") {
        res.writeHead(answer).end("ok");
      } else {
        res.writeHead(answer.status, answer.headers).end();
      }
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/hooks`, port });
}

/**
 * Verifies a webhook as a receiver would, with the Standard Webhooks reference library: the parsed
 * body, or the library's error. The library also refuses a timestamp more than 5 minutes off.
 */
export function verifyWebhook(secret: string, hook: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(hook.body, {
    "webhook-id": hook.id,
    "webhook-timestamp": hook.timestamp,
    "webhook-signature": hook.signature,
  });
}
