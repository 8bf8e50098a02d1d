/**
 * How the MongoDB adapters run one operation: connected, bounded in time, with unavailability
 * mapped to UnavailableError, so every store sharing a client fails alike.
 */
import { type MongoClient, MongoTopologyClosedError } from "mongodb";
import { UnavailableError } from "../../domain/errors.ts";
import { isUnavailableError } from "./mongo-unavailable.ts";

export interface MongoGuardOptions {
  readonly client: MongoClient;
  /** Upper bound on one guarded call, retries and reconnects included. */
  readonly operationTimeoutMS: number;
  /** The UnavailableError's message. */
  readonly unavailableMessage: string;
}

export interface MongoGuard {
  /** Runs `op` connected, mapping unavailability to UnavailableError, within `operationTimeoutMS`. */
  guard<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Closes the client; later operations fail (MongoNotConnectedError, mapped). */
  close(): Promise<void>;
}

export function createMongoGuard(options: MongoGuardOptions): MongoGuard {
  const { client, operationTimeoutMS, unavailableMessage } = options;
  const mapError = (err: unknown): unknown =>
    isUnavailableError(err) ? new UnavailableError(unavailableMessage, { cause: err }) : err;

  /**
   * Whether the client holds an open topology. The driver's auto-connect cannot be relied on alone:
   * when the very first connect fails (database down at startup), mongodb 7.9 closes the new
   * topology but keeps it on the client, and every later operation fails with "Topology is closed"
   * even after the server is back. An explicit `client.connect()` replaces a closed topology, so
   * calls connect first until one connect has succeeded. Once connected, the driver's monitor
   * reconnects by itself after outages and the topology stays open.
   */
  let connected = false;
  let closed = false;

  async function connectOnce(): Promise<void> {
    if (connected || closed) return; // after close(), operations fail (MongoNotConnectedError)
    await client.connect();
    connected = true;
  }

  /**
   * Runs `op` connected, mapping unavailability to UnavailableError, within `operationTimeoutMS`.
   * The driver bounds each attempt (socket, connect and selection timeouts), but a server that
   * accepts connections and then stops answering costs a timeout per retry and reconnect; the
   * caller still gets its answer in bounded time.
   */
  async function guarded<T>(op: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new UnavailableError(unavailableMessage, { cause: new Error("operation timed out") })),
        operationTimeoutMS,
      );
      // The caller gave up (its deadline passed, or it went away): stop waiting for the database
      // at once. The reads themselves carry the signal, and maxTimeMS bounds them on the server.
      if (signal !== undefined) {
        onAbort = () => reject(signal.reason);
        if (signal.aborted) onAbort();
        else signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      const work = (async () => {
        await connectOnce();
        return await op();
      })();
      // A late rejection of the abandoned attempt must not surface as unhandled.
      work.catch(() => {});
      return await Promise.race([work, deadline]);
    } catch (err) {
      if (err instanceof UnavailableError) throw err;
      if (signal?.aborted === true && err === signal.reason) throw err;
      if (err instanceof MongoTopologyClosedError && !closed) connected = false;
      throw mapError(err);
    } finally {
      clearTimeout(timer);
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    }
  }

  return {
    guard: guarded,
    close: async () => {
      closed = true;
      await client.close();
    },
  };
}
