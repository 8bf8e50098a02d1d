/**
 * Runs in the browser (served by test/support/page-server.ts): calls the service on another origin
 * the three ways a web app would, through @connectrpc/connect-web's Connect and gRPC-Web
 * transports and through fetch on the REST paths, and reports what it got.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { AgentService } from "../../gen/agent/v1/agent_pb.ts";
import { TokenService } from "../../gen/token/v1/token_pb.ts";

const UNKNOWN_MINT = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const TRANSFER = {
  source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};

export async function callService(baseUrl: string): Promise<Record<string, unknown>> {
  const transports: Record<string, Transport> = {
    connect: createConnectTransport({ baseUrl }),
    "connect (GET)": createConnectTransport({ baseUrl, useHttpGet: true }),
    "connect (binary)": createConnectTransport({ baseUrl, useBinaryFormat: true }),
    "grpc-web": createGrpcWebTransport({ baseUrl }),
  };
  const results: Record<string, unknown> = {};
  for (const [name, transport] of Object.entries(transports)) {
    const tokens = createClient(TokenService, transport);
    const agents = createClient(AgentService, transport);
    const prices = await tokens.getTokenPrices({ symbol: "sol" });
    const created = await agents.createAgent({ type: "transfer", config: TRANSFER });
    const agentId = created.data?.agentId ?? "";
    const got = await agents.getAgent({ agentId });
    const deleted = await agents.deleteAgent({ agentId });
    const error = await tokens.getTokenMetadata({ mint: UNKNOWN_MINT }).then(
      () => undefined,
      (reason: unknown) => {
        const e = ConnectError.from(reason);
        return { code: Code[e.code], message: e.rawMessage };
      },
    );
    // Server streams: the first price message, and the first event after cursor 0 (heartbeats skipped).
    const watching = new AbortController();
    let watchedSymbols: string[] = [];
    for await (const message of tokens.watchTokenPrices({ symbols: ["SOL"] }, { signal: watching.signal })) {
      if (message.heartbeat) continue;
      watchedSymbols = message.data.map((p) => p.symbol);
      break;
    }
    let firstEvent: string | undefined;
    for await (const message of agents.watchAgentEvents({ after: "0" }, { signal: watching.signal })) {
      if (message.data === undefined) continue;
      firstEvent = message.data.type;
      break;
    }
    watching.abort();
    results[name] = {
      watchedSymbols,
      firstEvent,
      symbols: prices.data.map((p) => p.symbol),
      agentId,
      config: got.data?.config,
      deleted: deleted.data?.deleted,
      error,
    };
  }

  const rest = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        "x-request-id": `browser-${method}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: response.status,
      requestId: response.headers.get("x-request-id"),
      json: await response.json(),
    };
  };
  const created = await rest("POST", "/v1/agents", { type: "transfer", config: TRANSFER });
  const agentId = (created.json as { data: { agentId: string } }).data.agentId;
  // Server-Sent Events as a browser reads them: EventSource, cross-origin.
  const sse = await new Promise<{ id: string; type: string }>((resolve, reject) => {
    const source = new EventSource(`${baseUrl}/v1/agents/events:watch?after=0`);
    // Agent events are named by their type (`event: agent.created`), so a page listens for a kind.
    source.addEventListener("agent.created", (event) => {
      const message = event as MessageEvent;
      source.close();
      resolve({ id: message.lastEventId, type: JSON.parse(message.data).data.type });
    });
    source.onerror = () => {
      source.close();
      reject(new Error("the event stream failed"));
    };
  });
  results.rest = {
    sse,
    prices: await rest("GET", "/v1/tokens/prices?symbol=usdc"),
    created,
    got: await rest("GET", `/v1/agents/${agentId}`),
    deleted: await rest("DELETE", `/v1/agents/${agentId}`),
    badLimit: await rest("GET", `/v1/tokens/${UNKNOWN_MINT}/transactions?limit=abc`),
  };
  return results;
}
