/**
 * Callers with identities (AUTH_MODE=apikey), with agents and keys on MongoDB (FerretDB) and in
 * memory, through every protocol (four connect-node transports and grpc-js): API keys and their
 * scopes, the admin service, owner isolation, per-key and per-address rate limits, and what
 * reaches logs and metrics.
 */
import { randomBytes } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { ApiKeyService } from "../gen/auth/v1/auth_pb.ts";
import { ServerReflection } from "../gen/grpc/reflection/v1/reflection_pb.ts";
import { Health } from "../gen/health/v1/health_pb.ts";
import { TokenService } from "../gen/token/v1/token_pb.ts";
import { localKey } from "../src/local-chain/index.ts";
import { transfer } from "./support/agent-fixtures.ts";
import { createProtocols, type Outcome, type Protocol, withStructConfig } from "./support/callers.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/** A wallet of the embedded chain's genesis: it holds every catalog token. */
const SEEDED_WALLET = localKey("wallet 1").address;

const ADMIN_KEY = `admin-${randomBytes(16).toString("hex")}`;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const AGENT_SCOPES = ["tokens:read", "agents:read", "agents:write"];

function codeOf(outcome: Outcome): string {
  return outcome.ok ? "ok" : (Code[outcome.code] ?? String(outcome.code));
}

function dataOf(outcome: Outcome): Record<string, unknown> {
  if (!outcome.ok) throw new Error(`call failed: ${JSON.stringify(outcome)}`);
  return outcome.json.data as Record<string, unknown>;
}

const STORES = {
  memory: (): Record<string, string> => ({}),
  mongodb: (): Record<string, string> => ({
    MONGODB_URI: inject("mongoUri"),
    MONGODB_DB: `auth_${randomBytes(3).toString("hex")}`,
  }),
};
type Store = keyof typeof STORES;

async function startWithKeys(store: Store, env: Record<string, string> = {}): Promise<RunningServer> {
  return startServer({ env: { ...STORES[store](), AUTH_MODE: "apikey", ADMIN_API_KEY: ADMIN_KEY, ...env } });
}

/** Makes a key in the server's own key store, without spending the admin key's write budget. */
async function makeKeyDirectly(server: RunningServer, owner: string, scopes: string[]) {
  const { record, key } = await server.context.apiKeys.create({ owner, scopes });
  return { key, keyId: record.keyId };
}

/** Makes a key through ApiKeyService with the admin key, as an operator would. */
async function makeKey(server: RunningServer, owner: string, scopes: string[]) {
  const admin = createClient(
    ApiKeyService,
    createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
  );
  const res = await admin.createApiKey({ owner, scopes }, { headers: bearer(ADMIN_KEY) });
  return { key: res.data?.key ?? "", keyId: res.data?.keyId ?? "" };
}

describe.each(Object.keys(STORES) as Store[])("API keys, with agents and keys on %s", (store) => {
  let server: RunningServer;
  let protocols: Protocol[];

  beforeAll(async () => {
    // Generous limits: the rate limit tests below have servers of their own.
    server = await startWithKeys(store, {
      RATE_LIMIT_READ_BURST: "100000",
      RATE_LIMIT_WRITE_BURST: "100000",
      RATE_LIMIT_ANONYMOUS_BURST: "100000",
    });
    protocols = createProtocols(server.baseUrl).map(withStructConfig);
  });
  afterAll(async () => {
    for (const p of protocols ?? []) p.close();
    await server?.close();
  });

  it("refuses calls without a key, with an unknown or revoked key or another scheme: unauthenticated", async () => {
    const revoked = await makeKey(server, "mallory", ["tokens:read", "agents:read"]);
    const admin = createClient(
      ApiKeyService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const answer = await admin.revokeApiKey({ keyId: revoked.keyId }, { headers: bearer(ADMIN_KEY) });
    expect(answer.data?.revoked).toBe(true);
    const refusals = [
      {},
      bearer("tas_made_up_key"),
      bearer(revoked.key),
      { authorization: "Basic dXNlcjpwYXNz" },
    ];
    for (const protocol of protocols) {
      for (const headers of refusals as Record<string, string>[]) {
        expect(codeOf(await protocol.call(TokenService, "GetTokenPrices", {}, headers)), protocol.name).toBe(
          "Unauthenticated",
        );
        expect(codeOf(await protocol.call(AgentService, "ListAgents", {}, headers)), protocol.name).toBe(
          "Unauthenticated",
        );
      }
    }
    // HTTP 401 on the REST paths and for Connect.
    expect((await fetch(`${server.baseUrl}/v1/tokens/prices`)).status).toBe(401);
    const connect = await fetch(`${server.baseUrl}/agent.v1.AgentService/ListAgents`, {
      method: "POST",
      headers: { "content-type": "application/json", ...bearer(revoked.key) },
      body: "{}",
    });
    expect(connect.status).toBe(401);
  });

  it("serves a key within its scopes, and answers permission_denied outside them", async () => {
    const reader = await makeKey(server, "reader", ["tokens:read", "agents:read"]);
    const writer = await makeKey(server, "writer", ["agents:write"]);
    for (const protocol of protocols) {
      const as = (key: string) => bearer(key);
      expect(codeOf(await protocol.call(TokenService, "GetTokenPrices", {}, as(reader.key)))).toBe("ok");
      expect(codeOf(await protocol.call(AgentService, "ListAgents", {}, as(reader.key)))).toBe("ok");
      expect(codeOf(await protocol.call(AgentService, "CreateAgent", transfer(1), as(reader.key)))).toBe(
        "PermissionDenied",
      );
      expect(codeOf(await protocol.call(AgentService, "CreateAgent", transfer(1), as(writer.key)))).toBe(
        "ok",
      );
      expect(codeOf(await protocol.call(AgentService, "ListAgents", {}, as(writer.key)))).toBe(
        "PermissionDenied",
      );
      expect(codeOf(await protocol.call(TokenService, "GetTokenPrices", {}, as(writer.key)))).toBe(
        "PermissionDenied",
      );
      expect(codeOf(await protocol.call(ApiKeyService, "ListApiKeys", {}, as(reader.key)))).toBe(
        "PermissionDenied",
      );
    }
  });

  it("manages keys through ApiKeyService, for admin keys only; a key is shown once, at creation", async () => {
    for (const protocol of protocols) {
      const created = dataOf(
        await protocol.call(
          ApiKeyService,
          "CreateApiKey",
          { owner: "dana", scopes: ["agents:read"] },
          bearer(ADMIN_KEY),
        ),
      );
      expect(created.key).toMatch(/^tas_[A-Za-z0-9_-]{11}_[A-Za-z0-9_-]{43}$/);
      expect(created.owner).toBe("dana");
      expect(created.scopes).toEqual(["agents:read"]);
      const listed = await protocol.call(ApiKeyService, "ListApiKeys", { owner: "dana" }, bearer(ADMIN_KEY));
      const page = dataOf(listed);
      const ids = (page.keys as { keyId: string }[]).map((k) => k.keyId);
      expect(ids).toContain(created.keyId);
      expect(JSON.stringify(listed)).not.toContain(created.key as string);
      const invalid = await protocol.call(
        ApiKeyService,
        "CreateApiKey",
        { owner: "no spaces allowed", scopes: ["agents:root"] },
        bearer(ADMIN_KEY),
      );
      expect(codeOf(invalid)).toBe("InvalidArgument");
      if (!invalid.ok) expect(invalid.violations.map((v) => v.field)).toEqual(["owner", "scopes[0]"]);
      // The bootstrap admin's owner and the principal of AUTH_MODE=none are no new key's to take.
      for (const owner of ["admin", "anonymous", "Admin"]) {
        const reserved = await protocol.call(
          ApiKeyService,
          "CreateApiKey",
          { owner, scopes: ["agents:read"] },
          bearer(ADMIN_KEY),
        );
        expect(codeOf(reserved), owner).toBe("InvalidArgument");
        if (!reserved.ok) {
          expect(reserved.violations).toEqual([
            {
              field: "owner",
              description: expect.stringMatching(
                /must not be "admin" or "anonymous": those owners are reserved/,
              ),
            },
          ]);
        }
      }
      const dana = dataOf(
        await protocol.call(
          ApiKeyService,
          "CreateApiKey",
          { owner: "dana", scopes: AGENT_SCOPES },
          bearer(ADMIN_KEY),
        ),
      );
      expect(codeOf(await protocol.call(ApiKeyService, "ListApiKeys", {}, bearer(dana.key as string)))).toBe(
        "PermissionDenied",
      );
    }
  });

  it("answers GetExecutor without a key, on every protocol and over REST: the executor's address is public", async () => {
    const reader = await makeKeyDirectly(server, "reader", ["tokens:read"]);
    const addresses = new Set<unknown>();
    for (const protocol of protocols) {
      for (const headers of [{}, bearer(reader.key), bearer("tas_made_up_key")] as Record<string, string>[]) {
        const outcome = await protocol.call(AgentService, "GetExecutor", {}, headers);
        expect(codeOf(outcome), `${protocol.name} ${JSON.stringify(headers)}`).toBe("ok");
        addresses.add(dataOf(outcome).address);
      }
    }
    const rest = await fetch(`${server.baseUrl}/v1/executor`);
    expect(rest.status).toBe(200);
    addresses.add(((await rest.json()) as { data: { address: string } }).data.address);
    // One executor, a base58 address, whoever asks; the next method still needs a key.
    expect(addresses.size).toBe(1);
    expect([...addresses][0]).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(codeOf(await (protocols[0] as Protocol).call(AgentService, "ListAgents", {}))).toBe(
      "Unauthenticated",
    );
  });

  it("needs no key for health, reflection, probes and metrics", async () => {
    for (const protocol of protocols.filter((p) => !p.name.startsWith("grpc-js"))) {
      expect(codeOf(await protocol.call(Health, "Check", { service: "" }))).toBe("ok");
    }
    for (const path of ["/healthz", "/readyz", "/metrics", "/openapi.json"]) {
      expect((await fetch(`${server.baseUrl}${path}`)).status, path).toBe(200);
    }
  });

  it("keeps each owner's agents and runs to that owner: nothing read, changed, deleted or listed across owners", async () => {
    const alice = await makeKey(server, "alice", AGENT_SCOPES);
    const bob = await makeKey(server, "bob", AGENT_SCOPES);
    const unknownId = "AAAAAAAAAAAAAAAAAAAAAA";
    // A seeded wallet as the source: it holds USDC, so PrepareApproval has a token account to name.
    const fromSeeded = { ...transfer(2), config: { ...transfer(2).config, source: SEEDED_WALLET } };
    for (const protocol of protocols) {
      const own = dataOf(await protocol.call(AgentService, "CreateAgent", fromSeeded, bearer(alice.key)));
      const id = own.agentId as string;
      const before = dataOf(
        await protocol.call(AgentService, "GetAgent", { agentId: id }, bearer(alice.key)),
      );
      const asBob = (method: string, request: Record<string, unknown>) =>
        protocol.call(AgentService, method, request, bearer(bob.key));
      // PrepareApproval is the owner's: alice gets her approval transaction.
      const approval = dataOf(
        await protocol.call(
          AgentService,
          "PrepareApproval",
          { agentId: id, allowance: 1 },
          bearer(alice.key),
        ),
      );
      expect(approval.owner, protocol.name).toBe(SEEDED_WALLET);
      // Each refusal reads exactly as for an id that exists nowhere.
      for (const method of ["GetAgent", "PauseAgent", "ResumeAgent", "ListAgentRuns", "PrepareApproval"]) {
        const extra = method === "PrepareApproval" ? { allowance: 1 } : {};
        const across = await asBob(method, { agentId: id, ...extra });
        const unknown = await asBob(method, { agentId: unknownId, ...extra });
        expect(codeOf(across), `${protocol.name} ${method}`).toBe("NotFound");
        expect(codeOf(unknown)).toBe("NotFound");
        if (!across.ok && !unknown.ok) expect(across.message.replace(id, unknownId)).toBe(unknown.message);
      }
      expect(dataOf(await asBob("DeleteAgent", { agentId: id }))).toEqual({ deleted: false });
      const bobsList = dataOf(await asBob("ListAgents", { limit: 100 }));
      expect((bobsList.agents as { agentId: string }[]).map((a) => a.agentId)).not.toContain(id);
      // Alice's agent is untouched, and bob's agents are not hers to see either.
      const after = dataOf(await protocol.call(AgentService, "GetAgent", { agentId: id }, bearer(alice.key)));
      expect(after).toEqual(before);
      const bobs = dataOf(await asBob("CreateAgent", transfer(3)));
      const alicesList = dataOf(
        await protocol.call(AgentService, "ListAgents", { limit: 100 }, bearer(alice.key)),
      );
      const alicesIds = (alicesList.agents as { agentId: string }[]).map((a) => a.agentId);
      expect(alicesIds).toContain(id);
      expect(alicesIds).not.toContain(bobs.agentId);
    }
  });

  it("never writes a key to the logs or metrics; call lines carry the key id; refusals are counted by reason", async () => {
    const carol = await makeKey(server, "carol", ["tokens:read"]);
    await protocols[0]?.call(TokenService, "GetTokenPrices", {}, bearer(carol.key));
    await protocols[0]?.call(AgentService, "ListAgents", {}, bearer(carol.key));
    await protocols[0]?.call(TokenService, "GetTokenPrices", {}, bearer(`${carol.key}x`));
    const logs = JSON.stringify(server.logs);
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    for (const text of [logs, metrics]) {
      expect(text).not.toContain(carol.key);
      expect(text).not.toContain(ADMIN_KEY);
      expect(text).not.toMatch(/tas_[A-Za-z0-9_-]{11}_[A-Za-z0-9_-]{20}/);
    }
    expect(metrics).not.toContain(carol.keyId);
    const lines = server.logs.filter((l) => l.msg === "rpc" && l.key_id === carol.keyId);
    expect(lines.map((l) => l.code)).toEqual(["ok", "permission_denied"]);
    for (const reason of ["unauthenticated", "permission_denied"]) {
      const line = metrics.split("\n").find((l) => l.startsWith(`http_rejections_total{reason="${reason}"}`));
      expect(Number(line?.split(" ")[1]), reason).toBeGreaterThan(0);
    }
  });
});

/** A DeleteAgent (a write) over one protocol, answering the code and the Retry-After and RateLimit fields. */
type RawCall = (key: string) => Promise<{ code: string; fields: Record<string, string | undefined> }>;

function rawCallers(baseUrl: string): { name: string; call: RawCall; close(): void }[] {
  const fieldsOf = (get: (name: string) => string | undefined) => ({
    "retry-after": get("retry-after"),
    ratelimit: get("ratelimit"),
    "ratelimit-policy": get("ratelimit-policy"),
  });
  const viaConnect = (name: string, transport: Transport) => {
    const client = createClient(AgentService, transport);
    return {
      name,
      async call(key: string) {
        try {
          await client.deleteAgent({ agentId: "AAAAAAAAAAAAAAAAAAAAAA" }, { headers: bearer(key) });
          return { code: "ok", fields: {} };
        } catch (error) {
          const e = ConnectError.from(error);
          return { code: Code[e.code] ?? "", fields: fieldsOf((n) => e.metadata.get(n) ?? undefined) };
        }
      },
      close() {},
    };
  };
  const address = new URL(baseUrl).host;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return [
    viaConnect("connect+json", createConnectTransport({ baseUrl, httpVersion: "1.1" })),
    viaConnect(
      "connect+proto h2",
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    ),
    viaConnect("grpc", createGrpcTransport({ baseUrl })),
    viaConnect("grpc-web", createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })),
    {
      name: "grpc-js",
      call(key: string) {
        const metadata = new grpc.Metadata();
        metadata.set("authorization", `Bearer ${key}`);
        // DeleteAgentRequest { agent_id = 1 }: the bytes by hand, so grpc-js needs no schema here.
        const id = Buffer.from("AAAAAAAAAAAAAAAAAAAAAA");
        const request = Buffer.concat([Buffer.from([0x0a, id.length]), id]);
        return new Promise((resolve) => {
          client.makeUnaryRequest(
            "/agent.v1.AgentService/DeleteAgent",
            (b: Buffer) => b,
            (b: Buffer) => b,
            request,
            metadata,
            (error) => {
              if (error === null) resolve({ code: "ok", fields: {} });
              else
                resolve({
                  code: Code[error.code] ?? "",
                  fields: fieldsOf((n) => error.metadata.get(n)[0]?.toString()),
                });
            },
          );
        });
      },
      close: () => client.close(),
    },
  ];
}

describe.each(Object.keys(STORES) as Store[])("rate limits, with keys on %s", (store) => {
  let server: RunningServer;
  beforeAll(async () => {
    // Writes: bursts of 3, then one a second; calls without a valid key: 4, then one a second.
    server = await startWithKeys(store, {
      RATE_LIMIT_WRITE_BURST: "3",
      RATE_LIMIT_WRITE_PER_SECOND: "1",
      RATE_LIMIT_ANONYMOUS_BURST: "4",
      RATE_LIMIT_ANONYMOUS_PER_SECOND: "1",
    });
  });
  afterAll(() => server?.close());

  it("refuses a burst from one key with resource_exhausted, Retry-After and RateLimit fields, while another key is served", async () => {
    const callers = rawCallers(server.baseUrl);
    for (const caller of callers) {
      const noisy = await makeKeyDirectly(server, "noisy", AGENT_SCOPES);
      const quiet = await makeKeyDirectly(server, "quiet", AGENT_SCOPES);
      const codes: string[] = [];
      let refusal: Awaited<ReturnType<RawCall>> | undefined;
      for (let i = 0; i < 8 && refusal === undefined; i++) {
        const result = await caller.call(noisy.key);
        codes.push(result.code);
        if (result.code !== "ok") refusal = result;
      }
      // Three in the burst; a fourth could only pass if a whole second went by meanwhile.
      expect(codes.slice(0, 3), caller.name).toEqual(["ok", "ok", "ok"]);
      expect(refusal?.code, caller.name).toBe("ResourceExhausted");
      expect(Number(refusal?.fields["retry-after"]), caller.name).toBeGreaterThanOrEqual(1);
      expect(refusal?.fields.ratelimit, caller.name).toMatch(/^"write";r=0;t=\d+$/);
      expect(refusal?.fields["ratelimit-policy"], caller.name).toBe('"write";q=3;w=3');
      expect((await caller.call(quiet.key)).code, caller.name).toBe("ok");
      caller.close();
    }
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/http_rejections_total\{reason="rate_limited"\} [1-9]/);
  });

  it("limits calls without a valid key per address: guesses are refused with Retry-After, keys in use still work", async () => {
    const known = await makeKeyDirectly(server, "known", AGENT_SCOPES);
    const [caller] = rawCallers(server.baseUrl);
    if (caller === undefined) throw new Error("no caller");
    expect((await caller.call(known.key)).code).toBe("ok");
    const codes: string[] = [];
    let refusal: Awaited<ReturnType<RawCall>> | undefined;
    for (let i = 0; i < 10; i++) {
      const result = await caller.call(`tas_guess${i}_${"x".repeat(43)}`);
      codes.push(result.code);
      if (result.code === "ResourceExhausted") refusal = result;
    }
    expect(codes.slice(0, 4)).toEqual(Array(4).fill("Unauthenticated"));
    // The fifth may find a token come back if a second went by; the budget is spent soon after.
    expect(codes.filter((c) => c === "ResourceExhausted").length).toBeGreaterThanOrEqual(4);
    expect(Number(refusal?.fields["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(refusal?.fields["ratelimit-policy"]).toBe('"anonymous";q=4;w=4');
    // A key this server has verified recently keeps working from the same address.
    expect((await caller.call(known.key)).code).toBe("ok");
  });
});

describe("public token reads and private reflection (AUTH_PUBLIC_TOKEN_READS, AUTH_PUBLIC_REFLECTION)", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startWithKeys("memory", {
      AUTH_PUBLIC_TOKEN_READS: "true",
      AUTH_PUBLIC_REFLECTION: "false",
    });
  });
  afterAll(() => server?.close());

  it("answers token reads without a key (counted per address), agent calls still need one", async () => {
    const prices = await fetch(`${server.baseUrl}/v1/tokens/prices?symbol=SOL`);
    expect(prices.status).toBe(200);
    expect(prices.headers.get("ratelimit-policy")).toBe('"anonymous";q=20;w=10');
    expect((await fetch(`${server.baseUrl}/v1/agents`)).status).toBe(401);
  });

  it("asks a key for server reflection", async () => {
    const client = createClient(ServerReflection, createGrpcTransport({ baseUrl: server.baseUrl }));
    const ask = async (headers: Record<string, string>) => {
      try {
        for await (const _ of client.serverReflectionInfo(
          (async function* () {
            yield { messageRequest: { case: "listServices", value: "" } };
          })(),
          { headers },
        )) {
          return "ok";
        }
        return "ok";
      } catch (error) {
        return Code[ConnectError.from(error).code];
      }
    };
    expect(await ask({})).toBe("Unauthenticated");
    expect(await ask(bearer(ADMIN_KEY))).toBe("ok");
  });
});

describe("AUTH_MODE=none", () => {
  it("serves every call as anonymous, except ApiKeyService, which still needs an admin key", async () => {
    const server = await startServer({ env: { AUTH_MODE: "none" } });
    try {
      const [protocol] = createProtocols(server.baseUrl);
      if (protocol === undefined) throw new Error("no protocol");
      expect(codeOf(await protocol.call(AgentService, "ListAgents", {}))).toBe("ok");
      expect(codeOf(await protocol.call(ApiKeyService, "ListApiKeys", {}))).toBe("Unauthenticated");
      expect(
        codeOf(await protocol.call(ApiKeyService, "CreateApiKey", { owner: "x", scopes: ["admin"] })),
      ).toBe("Unauthenticated");
      expect(server.logs.some((l) => l.level === 40 && String(l.msg).startsWith("AUTH_MODE=none"))).toBe(
        true,
      );
    } finally {
      await server.close();
    }
  });
});
