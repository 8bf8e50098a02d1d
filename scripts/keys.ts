/**
 * API keys from the command line, straight against the configured MongoDB (MONGODB_URI,
 * MONGODB_DB), so the first key can be made before any server runs:
 *
 *   npm run keys -- create --owner NAME [--scopes tokens:read,agents:read,agents:write]
 *                          [--max-agents N] [--max-pending N]
 *   npm run keys -- list [--owner NAME]
 *   npm run keys -- revoke KEY_ID        (an id that starts with "-": revoke --id=KEY_ID)
 *
 * `create` prints the key once, as JSON on stdout; only its hash is stored.
 */
import { parseArgs } from "node:util";
import { createMongoAgentStore } from "../src/agent/mongo-agent-store.ts";
import { mongoStoreOptions } from "../src/app-context.ts";
import { SCOPES } from "../src/auth/api-key.ts";
import { createApiKeys } from "../src/auth/api-keys.ts";
import { createMongoApiKeyStore } from "../src/auth/mongo-api-key-store.ts";
import { ConfigError, loadConfig } from "../src/config.ts";

const USAGE = `usage:
  npm run keys -- create --owner NAME [--scopes ${SCOPES.slice(0, 3).join(",")}] [--max-agents N] [--max-pending N]
  npm run keys -- list [--owner NAME]
  npm run keys -- revoke KEY_ID   (an id that starts with "-": revoke --id=KEY_ID)
scopes: ${SCOPES.join(", ")} (default: tokens:read, agents:read, agents:write)
--max-agents, --max-pending: this key's caps per owner (default: MAX_AGENTS_PER_OWNER, MAX_PENDING_PER_OWNER)`;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

const { positionals, values } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        owner: { type: "string" },
        scopes: { type: "string" },
        "max-agents": { type: "string" },
        "max-pending": { type: "string" },
        // For an id that starts with "-" (made before new ids were kept from it): `--id=-x…`, or
        // `revoke -- -x…`; as a bare argument it reads as an option.
        id: { type: "string" },
        help: { type: "boolean" },
      },
    });
  } catch (error) {
    return fail(`${(error as Error).message}\n${USAGE}`);
  }
})();
const [command, ...rest] = positionals;
if (values.help === true || command === undefined) fail(USAGE);

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  fail(error instanceof ConfigError ? error.message : String(error));
}
const mongo = config.mongo;
if (mongo === undefined) {
  fail(
    "MONGODB_URI is not set: without MongoDB, keys live inside the server process. Start it with " +
      "AUTH_MODE=apikey and ADMIN_API_KEY, and create keys with auth.v1.ApiKeyService (POST /v1/apikeys).",
  );
}
const agentStore = await createMongoAgentStore(mongoStoreOptions(mongo));
const keys = createApiKeys({
  store: createMongoApiKeyStore({
    db: agentStore.db,
    guard: agentStore.guard,
    maxTimeMS: mongo.operationTimeoutMs,
  }),
});
try {
  if (command === "create") {
    if (values.owner === undefined) fail(`create needs --owner\n${USAGE}`);
    const scopes = values.scopes?.split(",").map((s) => s.trim()) ?? [
      "tokens:read",
      "agents:read",
      "agents:write",
    ];
    // Whole numbers only; anything else reaches the key rules as NaN and is refused there by name.
    const cap = (text: string | undefined) =>
      text === undefined ? undefined : /^\d+$/.test(text) ? Number(text) : Number.NaN;
    const { record, key } = await keys.create({
      owner: values.owner,
      scopes,
      ...(values["max-agents"] === undefined ? {} : { maxAgents: cap(values["max-agents"]) }),
      ...(values["max-pending"] === undefined ? {} : { maxPending: cap(values["max-pending"]) }),
    });
    process.stdout.write(
      `${JSON.stringify({ keyId: record.keyId, key, owner: record.owner, scopes: record.scopes, createdAt: record.createdAt, maxAgents: record.maxAgents, maxPending: record.maxPending })}\n`,
    );
    process.stderr.write("Keep the key now: it is not stored and cannot be shown again.\n");
  } else if (command === "list") {
    for (let offset = 0; ; offset += 100) {
      const page = await keys.list({ owner: values.owner ?? "", limit: 100, offset });
      for (const k of page.keys) {
        process.stdout.write(
          `${JSON.stringify({ keyId: k.keyId, owner: k.owner, scopes: k.scopes, createdAt: k.createdAt, revokedAt: k.revokedAt, maxAgents: k.maxAgents, maxPending: k.maxPending })}\n`,
        );
      }
      if (offset + 100 >= page.total) break;
    }
  } else if (command === "revoke") {
    const keyId = values.id ?? rest[0];
    if (keyId === undefined) fail(`revoke needs a key id\n${USAGE}`);
    process.stdout.write(`${JSON.stringify({ keyId, revoked: await keys.revoke(keyId) })}\n`);
  } else {
    fail(`unknown command "${command}"\n${USAGE}`);
  }
} catch (error) {
  // Domain errors carry safe messages (bad owner, unknown scope, database unreachable).
  process.stderr.write(`${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  await agentStore.close();
}
