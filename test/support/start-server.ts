import type { Server as NetServer } from "node:net";
import { Writable } from "node:stream";
import { type AppContext, type AppContextOverrides, createAppContext } from "../../src/app-context.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { build } from "../../src/server.ts";

export interface RunningServer {
  readonly baseUrl: string;
  readonly port: number;
  readonly context: AppContext;
  /** The server's listening socket, e.g. to watch its connections. */
  readonly listener: NetServer;
  /** Every log line the server wrote, parsed. */
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * Starts the real server, as `main.ts` builds it, on an ephemeral loopback port. `env` is read by
 * the real configuration loader; logs are captured instead of printed.
 */
export async function startServer(
  options: { env?: Record<string, string>; overrides?: AppContextOverrides } = {},
): Promise<RunningServer> {
  // The scheduler would activate agents behind the back of tests about other things; the tests
  // about it turn it on.
  const config = loadConfig({
    HOST: "127.0.0.1",
    PORT: "0",
    LOG_LEVEL: "info",
    SCHEDULER_ENABLED: "false",
    // Tests about other things call without keys; the auth tests turn keys on.
    AUTH_MODE: "none",
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
  const context = await createAppContext(config, logger, options.overrides);
  const server = build(context);
  const address = await server.listen();
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    port: address.port,
    context,
    listener: server.listener,
    logs,
    async close() {
      await server.close();
      await context.destroy();
    },
  };
}
