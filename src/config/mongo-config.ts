import type { ConfigReader } from "./config-reader.ts";

export interface MongoConfig {
  readonly uri: string;
  /** Database name; undefined means the one in the URI, else the project default. */
  readonly dbName: string | undefined;
  readonly maxPoolSize: number;
  readonly serverSelectionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly socketTimeoutMs: number;
  /** Bound on one store call, retries and reconnects included. */
  readonly operationTimeoutMs: number;
}

/** The MongoDB settings; undefined when MONGODB_URI is unset (agents live in memory). */
export function readMongo(reader: ConfigReader): MongoConfig | undefined {
  const { read, int, problems } = reader;
  let mongo: MongoConfig | undefined;
  const uri = read("MONGODB_URI");
  if (uri !== "" && !/^mongodb(\+srv)?:\/\/[^/?#]/.test(uri)) {
    // The URI itself is not echoed: it may hold a password.
    problems.push('MONGODB_URI must start with "mongodb://" or "mongodb+srv://" followed by a host');
  }
  const dbName = read("MONGODB_DB");
  if (dbName !== "" && !/^[^/\\. "$*<>:|?]{1,63}$/.test(dbName)) {
    problems.push(`MONGODB_DB must be a valid MongoDB database name (got "${dbName}")`);
  }
  const maxPoolSize = int("MONGODB_MAX_POOL_SIZE", 1, 1000);
  const serverSelectionTimeoutMs = int("MONGODB_SERVER_SELECTION_TIMEOUT_MS", 100, 120_000);
  const connectTimeoutMs = int("MONGODB_CONNECT_TIMEOUT_MS", 100, 120_000);
  const socketTimeoutMs = int("MONGODB_SOCKET_TIMEOUT_MS", 0, 600_000);
  const operationTimeoutMs = int("MONGODB_OPERATION_TIMEOUT_MS", 100, 600_000);
  if (uri !== "") {
    mongo = {
      uri,
      dbName: dbName === "" ? undefined : dbName,
      maxPoolSize,
      serverSelectionTimeoutMs,
      connectTimeoutMs,
      socketTimeoutMs,
      operationTimeoutMs,
    };
  }
  return mongo;
}
