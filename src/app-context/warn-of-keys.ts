import type { ApiKeyStore } from "../auth/api-key-store.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";

/**
 * Says at startup how calls will be let in, and what to do when no key exists to call with: keys
 * are required by default with MONGODB_URI, SOLANA_RPC_URL or NODE_ENV=production (the
 * container), and a first `docker run` or `MONGODB_URI=… npm start` otherwise answers every call
 * with 401 and no clue why. With MongoDB the keys may already exist (`npm run keys`), so that
 * warning waits for the store to say it holds none; a database still down says nothing here.
 */
export function warnOfKeys(
  config: Config,
  storeKind: "memory" | "mongodb",
  keys: ApiKeyStore | undefined,
  logger: Logger,
): void {
  if (config.auth.mode === "none") {
    logger.warn("AUTH_MODE=none: calls need no API key, every caller is anonymous and sees every agent");
    return;
  }
  if (config.auth.adminKey !== undefined) return;
  const required =
    "API keys are required (AUTH_MODE=apikey, the default with MONGODB_URI, SOLANA_RPC_URL or NODE_ENV=production as in the container)";
  if (storeKind === "memory" || keys === undefined) {
    logger.warn(
      `${required} and keys live in memory, where none exists yet: every call is refused with 401. Start with ADMIN_API_KEY set to 32 or more random characters (docker run -e ADMIN_API_KEY=…) and make keys with POST /v1/apikeys, or set AUTH_MODE=none to try it without keys`,
    );
    return;
  }
  keys.list({ limit: 1, offset: 0 }).then(
    (page) => {
      if (page.total > 0) return;
      logger.warn(
        `${required} and the database holds none yet: every call is refused with 401. Make one with npm run keys -- create --owner NAME (in the container: node scripts/keys.ts create --owner NAME), or start with ADMIN_API_KEY set to 32 or more random characters`,
      );
    },
    () => {},
  );
}
