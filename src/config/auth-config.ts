import type { ConfigReader } from "./config-reader.ts";

/** A token bucket: `rate` calls a second, bursts of up to `burst`. */
export interface RateLimitConfig {
  readonly rate: number;
  readonly burst: number;
}

export interface AuthConfig {
  /** "apikey": calls need `authorization: Bearer <key>`; "none": every caller is "anonymous". */
  readonly mode: "apikey" | "none";
  /** ADMIN_API_KEY: a bootstrap key with every scope (owner "admin"); never logged. */
  readonly adminKey: string | undefined;
  /** TokenService answers callers without a key (limited per address). */
  readonly publicTokenReads: boolean;
  /** Server reflection answers callers without a key. */
  readonly publicReflection: boolean;
  /** Per key: calls that change nothing, and the others. */
  readonly read: RateLimitConfig;
  readonly write: RateLimitConfig;
  /** Per client address: calls without a valid key (failed attempts, public token reads). */
  readonly anonymous: RateLimitConfig;
}

export interface AuthDefaults {
  /** MONGODB_URI is set: agents outlive the process. */
  readonly persistent: boolean;
  /** NODE_ENV=production. */
  readonly production: boolean;
}

export function readAuth(reader: ConfigReader, defaults: AuthDefaults): AuthConfig {
  const { read, int, bool, problems } = reader;
  const { production } = defaults;
  // Keys are required wherever agents outlive the process (MongoDB) or in production (the
  // container); the embedded in-memory default stays open so `npm start` answers at once.
  const authModeText = read("AUTH_MODE").toLowerCase();
  // Against a cluster, transfers move real tokens: keys by default, as for MongoDB and production.
  const onCluster = read("SOLANA_RPC_URL") !== "";
  const authMode =
    authModeText === "" ? (defaults.persistent || production || onCluster ? "apikey" : "none") : authModeText;
  if (authMode !== "apikey" && authMode !== "none") {
    problems.push(`AUTH_MODE must be apikey or none (got "${authModeText}")`);
  }
  const adminKey = read("ADMIN_API_KEY");
  if (adminKey !== "" && (adminKey.length < 32 || adminKey.length > 256 || /\s/.test(adminKey))) {
    // The value is a secret: never echoed.
    problems.push("ADMIN_API_KEY must be 32 to 256 characters without spaces");
  }
  const bucket = (prefix: "READ" | "WRITE" | "ANONYMOUS"): RateLimitConfig => ({
    rate: int(`RATE_LIMIT_${prefix}_PER_SECOND`, 1, 1_000_000),
    burst: int(`RATE_LIMIT_${prefix}_BURST`, 1, 1_000_000),
  });
  const auth: AuthConfig = {
    mode: authMode as AuthConfig["mode"],
    adminKey: adminKey === "" ? undefined : adminKey,
    publicTokenReads: bool("AUTH_PUBLIC_TOKEN_READS"),
    publicReflection: bool("AUTH_PUBLIC_REFLECTION"),
    read: bucket("READ"),
    write: bucket("WRITE"),
    anonymous: bucket("ANONYMOUS"),
  };
  return auth;
}
