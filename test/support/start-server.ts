import type { Server as NetServer } from "node:net";
import { Writable } from "node:stream";
import type { AppContext } from "../../src/app-context.ts";
import { loadConfig } from "../../src/config.ts";
import type { EmbeddedLocalChain } from "../../src/local-chain/index.ts";
import { createLogger } from "../../src/logger.ts";
import type { Server } from "../../src/server.ts";
import { createService, type Service, type ServiceOverrides } from "../../src/service.ts";

export interface RunningServer {
  readonly baseUrl: string;
  readonly port: number;
  readonly context: AppContext;
  /** The embedded local chain the server reads (when no SOLANA_RPC_URL is given): its url serves JSON-RPC. */
  readonly localChain: EmbeddedLocalChain | undefined;
  /** The server's listening socket, e.g. to watch its connections. */
  readonly listener: NetServer;
  /** What the server's streams hold now (leak checks). */
  readonly streamStats: Server["streamStats"];
  /** The scheduler, when SCHEDULER_ENABLED (tests call its poll, tick(), themselves). */
  readonly scheduler: Service["scheduler"];
  /** The webhook outbox's loop, when WEBHOOKS_ENABLED. */
  readonly webhooks: Service["webhooks"];
  /** Every log line the server wrote, parsed. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * Starts the real service, as `main.ts` builds it (chain, context, server), on an ephemeral
 * loopback port. `env` is read by the real configuration loader; logs are captured instead of
 * printed. The embedded local chain's JSON-RPC listens on an ephemeral port too.
 */
export async function startServer(
  options: { env?: Record<string, string>; overrides?: ServiceOverrides } = {},
): Promise<RunningServer> {
  // The scheduler would activate agents behind the back of tests about other things; the tests
  // about it turn it on.
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info",
    SCHEDULER_ENABLED: "false",
    // As the scheduler: webhook tests turn deliveries on.
    WEBHOOKS_ENABLED: "false",
    // Tests about other things call without keys; the auth tests turn keys on.
    AUTH_MODE: "none",
    // Tests about other things make hundreds of agents as one owner; the caps' own tests set them.
    MAX_AGENTS_PER_OWNER: "10000000",
    MAX_PENDING_PER_OWNER: "10000000",
    LOCAL_SOLANA_RPC_PORT: "0",
    ...options.env,
  });
  const logs: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split("\n")) if (line !== "") logs.push(JSON.parse(line));
      callback();
    },
  });
  const logger = createLogger({ level: config.logLevel, destination });
  const service = await createService(config, logger, options.overrides);
  const address = await service.listen();
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    port: address.port,
    context: service.context,
    localChain: service.localChain,
    listener: service.server.listener,
    streamStats: () => service.server.streamStats(),
    scheduler: service.scheduler,
    webhooks: service.webhooks,
    logs,
    close: () => service.close(),
  };
}
