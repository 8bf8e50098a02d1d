/**
 * An agent owner's side of the transfer story, as a user's script does it: REST calls (with the
 * owner's API key, when keys are on), the approval PrepareApproval gives, signed by the source
 * wallet's own key with @solana/kit and sent, and the chain's own view of token accounts.
 */
import {
  type Address,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  type KeyPairSigner,
  signTransaction,
} from "@solana/kit";
import { expect } from "vitest";
import type { ChainClient } from "./chain-client.ts";

export type Json = Record<string, unknown>;

export function createTransferOwner(options: { baseUrl: string; chain: ChainClient; key?: string }) {
  const { baseUrl, chain, key } = options;
  /** REST: JSON in, JSON out, the HTTP status kept. */
  const rest = async (
    method: string,
    path: string,
    body?: object,
    extraHeaders: Record<string, string> = {},
  ): Promise<{ status: number; json: Json }> => {
    const headers: Record<string, string> = { ...extraHeaders };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (key !== undefined) headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const ok = async (
    method: string,
    path: string,
    body?: object,
    extraHeaders?: Record<string, string>,
  ): Promise<Json> => {
    const { status, json } = await rest(method, path, body, extraHeaders);
    if (status !== 200) throw new Error(`${method} ${path}: HTTP ${status} ${JSON.stringify(json)}`);
    return json.data as Json;
  };
  /** A token account as the chain's jsonParsed encoding shows it; undefined when it does not exist. */
  const tokenAccount = async (account: Address): Promise<Json | undefined> => {
    const { value } = await chain.rpc.getAccountInfo(account, { encoding: "jsonParsed" }).send();
    return value === null ? undefined : (value.data as { parsed: { info: Json } }).parsed.info;
  };
  return {
    rest,
    ok,
    tokenAccount,
    async balance(account: Address): Promise<bigint> {
      const info = await tokenAccount(account);
      return info === undefined ? 0n : BigInt((info.tokenAmount as { amount: string }).amount);
    },
    /** PrepareApproval, signed by `wallet` with kit and sent; resolves once confirmed. */
    async approve(agentId: string, allowance: number, wallet: KeyPairSigner): Promise<Json> {
      const approval = await ok("POST", `/v1/agents/${agentId}:prepareApproval`, { allowance });
      const unsigned = getTransactionDecoder().decode(
        getBase64Encoder().encode(approval.transaction as string),
      );
      // The wallet's own key signs: kit's signTransaction over the decoded wire transaction.
      const transaction = await signTransaction([wallet.keyPair], unsigned);
      const signature = await chain.rpc
        .sendTransaction(getBase64EncodedWireTransaction(transaction), { encoding: "base64" })
        .send();
      const status = await chain.confirm(signature);
      expect(status.err).toBeNull();
      return approval;
    },
    /**
     * CreateAgent over REST: an hourly transfer agent; resolves with its id. With an idempotency
     * key, a retry of a create whose answer was lost makes no second agent.
     */
    async createTransfer(
      config: { source: string; destination: string; amount: number; token: string },
      options: { idempotencyKey?: string } = {},
    ) {
      const created = await ok(
        "POST",
        "/v1/agents",
        { type: "transfer", config: { ...config, schedule: "hourly" } },
        options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey },
      );
      return created.agentId as string;
    },
    runsOf: async (agentId: string): Promise<Json[]> =>
      (await ok("GET", `/v1/agents/${agentId}/runs?limit=100`)).runs as Json[],
    /**
     * PauseAgent, then the number of the agent's succeeded runs once `agrees(count)` says the
     * chain shows exactly that many. A run signed just before the pause still lands, and is
     * recorded once its slot is confirmed (the slot after the one it landed in), so a count taken
     * at once may be one short of what the chain shows. A transfer without a run, or a run without
     * a transfer, never agrees, and fails after `withinMs`.
     */
    async pauseSettled(
      agentId: string,
      agrees: (succeeded: number) => Promise<boolean>,
      withinMs = 15_000,
    ): Promise<number> {
      await ok("POST", `/v1/agents/${agentId}:pause`);
      return until(
        async () => {
          const runs = (await ok("GET", `/v1/agents/${agentId}/runs?limit=100`)).runs as Json[];
          const succeeded = runs.filter((r) => r.outcome === "succeeded").length;
          return (await agrees(succeeded)) ? succeeded : undefined;
        },
        withinMs,
        `the chain to show exactly the succeeded runs of ${agentId} after its pause`,
      );
    },
  };
}

/** Resolves with `probe`'s first defined value; throws when none came within `ms`. */
export async function until<T>(probe: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
