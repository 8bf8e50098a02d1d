/**
 * The bare-driver peer of GetAgent on MongoDB: `CONCURRENCY` loops of `findOne({_id})` on the
 * agents collection with the official driver, for `SECONDS`, printing one JSON line with the
 * operations per second. No HTTP, no validation, no conversion: the floor for one read.
 *
 *   node scripts/bench/find-one-loop.ts MONGODB_URI DB AGENT_ID SECONDS CONCURRENCY
 */
import { MongoClient } from "mongodb";

const [uri, dbName, agentId, secondsText, concurrencyText] = process.argv.slice(2);
const seconds = Number(secondsText);
const client = new MongoClient(uri as string, { maxPoolSize: 20 });
await client.connect();
const agents = client.db(dbName).collection<{ _id: string }>("agents");
if ((await agents.findOne({ _id: agentId as string })) === null) throw new Error(`no agent ${agentId}`);
const end = performance.now() + seconds * 1000;
let done = 0;
await Promise.all(
  Array.from({ length: Number(concurrencyText) }, async () => {
    while (performance.now() < end) {
      await agents.findOne({ _id: agentId as string });
      done++;
    }
  }),
);
console.log(JSON.stringify({ opsPerSecond: done / seconds }));
await client.close();
