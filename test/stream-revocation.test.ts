/**
 * Revoking an API key ends the streams it opened, with unauthenticated, on every entry a stream
 * has: connect-node (the Connect protocol), the lean gRPC stream path, and REST as Server-Sent
 * Events. In memory one server does it all (the revoke ends them at once); on MongoDB (FerretDB)
 * the streams are open on one replica and the key is revoked through another, which the
 * streaming replica learns from the store within the key cache's window.
 */
import { randomBytes } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { errorFromJson } from "@connectrpc/connect/protocol-connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { ApiKeyService } from "../gen/auth/v1/auth_pb.ts";
import { useCleanups } from "./support/cleanups.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

const cleanup = useCleanups();
const ADMIN_KEY = `admin-${randomBytes(16).toString("hex")}`;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

const STORES: [string, () => Record<string, string>][] = [
  ["memory", () => ({})],
  [
    "mongo",
    () => ({
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DB: `stream_revocation_${randomBytes(3).toString("hex")}`,
    }),
  ],
];

async function serve(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({ env: { ...env, AUTH_MODE: "apikey", ADMIN_API_KEY: ADMIN_KEY } });
  cleanup(() => server.close());
  return server;
}

/** How a stream went: whether its first message came, and how it ended ("open" until it does). */
interface Followed {
  readonly name: string;
  opened: boolean;
  ended: string;
}

/** Reads a connect-node client's stream in the background, noting its first message and its end. */
function follow(name: string, messages: AsyncIterable<unknown>): Followed {
  const followed: Followed = { name, opened: false, ended: "open" };
  void (async () => {
    try {
      for await (const _ of messages) followed.opened = true;
      followed.ended = "ok";
    } catch (error) {
      followed.ended = Code[ConnectError.from(error).code] ?? "unknown";
    }
  })();
  return followed;
}

const unreadable = new ConnectError("the error event is not Connect's error JSON", Code.Unknown);

/** Reads an SSE stream in the background: opened at its first bytes, ended by an error event's code. */
function followSse(name: string, url: string, key: string, signal: AbortSignal): Followed {
  const followed: Followed = { name, opened: false, ended: "open" };
  void (async () => {
    try {
      const response = await fetch(url, { headers: bearer(key), signal });
      if (response.status !== 200) {
        followed.ended = `HTTP ${response.status}`;
        return;
      }
      const decoder = new TextDecoder();
      let text = "";
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        followed.opened = true;
        text += decoder.decode(chunk, { stream: true });
      }
      const error = /event: error\ndata: (.*)\n/.exec(text)?.[1];
      followed.ended =
        error === undefined
          ? "ok"
          : (Code[errorFromJson(JSON.parse(error), undefined, unreadable).code] ?? "");
    } catch {
      followed.ended = "aborted";
    }
  })();
  return followed;
}

describe.each(STORES)("revoking an API key on the %s store", (_name, storeEnv) => {
  it("ends every stream the key opened with unauthenticated, and leaves other keys' streams open", {
    timeout: 60_000,
  }, async () => {
    const env = storeEnv();
    const streaming = await serve(env);
    // On MongoDB, the key is revoked through another replica sharing the keys.
    const revoking = env.MONGODB_URI === undefined ? streaming : await serve(env);
    if (env.MONGODB_URI !== undefined) {
      cleanup(async () => {
        await streaming.context.mongoClient?.db(streaming.context.config.mongo?.dbName).dropDatabase();
      });
    }
    const { record, key } = await streaming.context.apiKeys.create({
      owner: "alice",
      scopes: ["agents:read"],
    });
    const other = (await streaming.context.apiKeys.create({ owner: "bob", scopes: ["agents:read"] })).key;
    const abort = new AbortController();
    cleanup(async () => abort.abort());
    const options = (k: string) => ({ headers: bearer(k), signal: abort.signal });
    const connect = createClient(
      AgentService,
      createConnectTransport({ baseUrl: streaming.baseUrl, httpVersion: "2" }),
    );
    const grpc = createClient(AgentService, createGrpcTransport({ baseUrl: streaming.baseUrl }));
    const streams = [
      follow("connect-node", connect.watchAgentEvents({}, options(key))),
      follow("lean gRPC", grpc.watchAgentEvents({}, options(key))),
      followSse("REST SSE", `${streaming.baseUrl}/v1/agents/events:watch`, key, abort.signal),
    ];
    if (revoking !== streaming) {
      const there = createClient(AgentService, createGrpcTransport({ baseUrl: revoking.baseUrl }));
      streams.push(follow("lean gRPC on the revoking replica", there.watchAgentEvents({}, options(key))));
    }
    const bystander = follow("another key's stream", grpc.watchAgentEvents({}, options(other)));
    await expect.poll(() => [...streams, bystander].filter((s) => s.opened).length).toBe(streams.length + 1);

    const admin = createClient(
      ApiKeyService,
      createConnectTransport({ baseUrl: revoking.baseUrl, httpVersion: "1.1" }),
    );
    const revoked = await admin.revokeApiKey({ keyId: record.keyId }, { headers: bearer(ADMIN_KEY) });
    expect(revoked.data?.revoked).toBe(true);

    await expect
      .poll(() => streams.map((s) => `${s.name}: ${s.ended}`), { timeout: 30_000 })
      .toEqual(streams.map((s) => `${s.name}: Unauthenticated`));
    expect(bystander.ended).toBe("open");
    // The ended streams let go of their slots and of their holds on the key; bob's holds his.
    await expect.poll(() => streaming.streamStats().slots).toEqual({ streams: 1, keys: 1 });
    expect(streaming.streamStats().revocations).toMatchObject({ keys: 1, holds: 1 });
  });
});
