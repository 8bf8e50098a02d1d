/**
 * An idempotency key decides one agent even when the database crashes mid-load: keys created 20
 * at a time while FerretDB is SIGKILLed and restarted, each retried until it succeeds, make
 * exactly one agent each. (A slow test: it runs on its own, after the main suite.)
 */
import { MongoClient } from "mongodb";
import { describe, expect, it } from "vitest";
import { createOverJson, transfer } from "./support/agent-fixtures.ts";
import { useCleanups } from "./support/cleanups.ts";
import { startFerretdb } from "./support/ferretdb.ts";
import { startServer } from "./support/start-server.ts";

const defer = useCleanups();

describe("a database crash in the middle of keyed creates", () => {
  it("600 keys retried until they succeed make exactly 600 agents", async () => {
    const db = await startFerretdb();
    defer(() => db.stop());
    const dbName = "idem_crash";
    const server = await startServer({
      env: {
        MONGODB_URI: db.uri,
        MONGODB_DB: dbName,
        MONGODB_SERVER_SELECTION_TIMEOUT_MS: "300",
        MONGODB_OPERATION_TIMEOUT_MS: "1000",
        MONGODB_SOCKET_TIMEOUT_MS: "1000",
      },
    });
    defer(() => server.close());
    const KEYS = Number(process.env.IDEM_KEYS ?? 600);
    let crashed = false;
    const createUntilDone = async (i: number) => {
      for (let attempt = 0; attempt < 200; attempt++) {
        const answer = await createOverJson(server.baseUrl, transfer(1 + i), `crash-${i}`).catch(
          () => undefined,
        );
        if (answer?.status === 200) return (answer.json.data as { agentId: string }).agentId;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`key ${i} never succeeded`);
    };
    // Keys go in 20 at a time; the database is SIGKILLed a third of the way in, back shortly after.
    const ids: string[] = [];
    const lanes = Array.from({ length: 20 }, async (_, lane) => {
      for (let i = lane; i < KEYS; i += 20) {
        if (!crashed && i >= KEYS / 3) {
          crashed = true;
          await db.kill();
          // Back after half a second; a restart that fails (a loaded machine) is tried again.
          void (async () => {
            await new Promise((resolve) => setTimeout(resolve, 500));
            for (let tries = 0; tries < 20; tries++) {
              try {
                await db.restart();
                return;
              } catch {
                await new Promise((resolve) => setTimeout(resolve, 500));
              }
            }
          })();
        }
        ids.push(await createUntilDone(i));
      }
    });
    await Promise.all(lanes);
    expect(new Set(ids).size).toBe(KEYS);
    const client = new MongoClient(db.uri);
    defer(() => client.close());
    expect(await client.db(dbName).collection("agents").countDocuments()).toBe(KEYS);
  }, 180_000);
});
