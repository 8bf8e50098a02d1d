/**
 * ListAgents keyset paging (page_token / next_page_token) beside the seed's offset: while agents
 * are being created, token pages stay disjoint and together hold every agent that existed at the
 * start, whereas offset pages repeat rows. On both stores, through the real server.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type RunningServer, startServer } from "./support/start-server.ts";

type Json = Record<string, unknown>;

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({ MONGODB_URI: inject("mongoUri"), MONGODB_DB: `keyset_${randomBytes(3).toString("hex")}` }),
  ],
];

describe.each(STORES)("on the %s store", (_name, env) => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ env: env() });
  });
  afterAll(() => server.close());

  async function call(method: string, body: Json): Promise<{ status: number; json: Json }> {
    const res = await fetch(`${server.baseUrl}/agent.v1.AgentService/${method}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Json };
  }
  const createOne = async (type: "transfer" | "swap") => {
    const config =
      type === "transfer"
        ? {
            source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
            destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
            amount: 1,
            token: "USDC",
            schedule: "daily",
          }
        : {
            wallet: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
            inputToken: "USDC",
            outputToken: "SOL",
            amount: 1,
            schedule: "daily",
          };
    const { json } = await call("CreateAgent", { type, config });
    return (json.data as Json).agentId as string;
  };
  const page = async (body: Json) => (await call("ListAgents", body)).json.data as Json;
  const ids = (data: Json) => (data.agents as Json[]).map((a) => a.agentId as string);

  it("token pages are disjoint and complete while agents are created; offset pages repeat", async () => {
    const before: string[] = [];
    for (let i = 0; i < 25; i++) before.push(await createOne("transfer"));

    const seen: string[] = [];
    let token = "";
    for (let round = 0; round < 20; round++) {
      const data = await page({ type: "transfer", limit: 7, pageToken: token });
      seen.push(...ids(data));
      await createOne("transfer"); // a new agent arrives between pages
      token = data.nextPageToken as string;
      if (token === "") break;
    }
    expect(token).toBe("");
    expect(new Set(seen).size).toBe(seen.length); // no repeats
    for (const id of before) expect(seen).toContain(id); // none missed

    const byOffset: string[] = [];
    for (let offset = 0; offset < 28; offset += 7) {
      byOffset.push(...ids(await page({ type: "transfer", limit: 7, offset })));
      await createOne("transfer");
    }
    expect(new Set(byOffset).size).toBeLessThan(byOffset.length); // offset repeats rows meanwhile
  });

  it("without page_token the answer keeps the seed's shape: no nextPageToken", async () => {
    expect(Object.keys(await page({ limit: 2 })).sort()).toEqual(["agents", "limit", "offset", "total"]);
  });

  it("refuses malformed tokens, tokens of another filter, and a token with an offset", async () => {
    const first = await page({ type: "transfer", limit: 1, pageToken: "" });
    const token = first.nextPageToken as string;
    expect(token).not.toBe("");
    for (const body of [
      { pageToken: "not-a-token" },
      { pageToken: Buffer.from("[1,2]").toString("base64url") },
      { type: "swap", pageToken: token },
      { type: "transfer", pageToken: token, offset: 3 },
    ]) {
      const { status, json } = await call("ListAgents", body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect(json.message as string).toMatch(/page_token|offset/);
    }
  });
});
