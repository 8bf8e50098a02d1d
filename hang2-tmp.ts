import { execSync, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createMongoAgentStore } from "./src/agent/mongo-agent-store.ts";
const port = Number(process.argv[2]);
const dir = mkdtempSync("/tmp/fdx-");
const fdb = spawn(".tools/bin/ferretdb", [`--listen-addr=127.0.0.1:${port}`, `--sqlite-url=file:${dir}/`], { stdio: "ignore" });
await new Promise(r => setTimeout(r, 1500));
const store = await createMongoAgentStore({ uri: `mongodb://127.0.0.1:${port}/x`, serverSelectionTimeoutMS: 500, socketTimeoutMS: 1000, operationTimeoutMS: 1500, connectTimeoutMS: 2000 });
await store.list("o", { limit: 10, offset: 0 });
fdb.kill("SIGSTOP");
const ops = [];
for (let i = 0; i < 12; i++) { const t = Date.now(); try { await store.get("o", "x"); } catch (e) { ops.push(Date.now() - t); } }
fdb.kill("SIGCONT");
const t3 = Date.now();
let ok = false;
for (let i = 0; i < 240; i++) {
  try { await store.get("o", "x"); ok = true; console.log(port, "recovered after", Date.now() - t3, "ops", ops.join(",")); break; }
  catch (e) { await new Promise(r => setTimeout(r, 250)); }
}
if (!ok) console.log(port, "NOT recovered after", Date.now() - t3, ((await store.ping().catch(e => e)) as Error)?.cause?.message);
await store.close(); fdb.kill("SIGKILL");
