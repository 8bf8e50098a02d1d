/**
 * `npm run keys` makes, lists and revokes keys straight in MongoDB (FerretDB here), before any
 * server runs; a server on the same database then honours them, with keys required by default.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, inject, it } from "vitest";
import { AgentService } from "../gen/agent/v1/agent_pb.ts";
import { newApiKey } from "../src/auth/api-key.ts";
import { startServer } from "./support/start-server.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);

function keysCli(args: string[], env: Record<string, string>) {
  return run(process.execPath, ["scripts/keys.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
  });
}

describe("npm run keys", () => {
  it("creates, lists and revokes keys in MongoDB, which a server then honours", async () => {
    const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DB: `keys_${randomBytes(3).toString("hex")}` };
    const first = JSON.parse((await keysCli(["create", "--owner", "erin"], env)).stdout);
    const second = JSON.parse(
      (await keysCli(["create", "--owner", "erin", "--scopes", "tokens:read"], env)).stdout,
    );
    expect(first).toMatchObject({ owner: "erin", scopes: ["tokens:read", "agents:read", "agents:write"] });
    expect(second.scopes).toEqual(["tokens:read"]);
    expect(JSON.parse((await keysCli(["revoke", second.keyId], env)).stdout)).toEqual({
      keyId: second.keyId,
      revoked: true,
    });
    const listed = (await keysCli(["list", "--owner", "erin"], env)).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(listed.map((k) => k.keyId).sort()).toEqual([first.keyId, second.keyId].sort());
    expect(listed.find((k) => k.keyId === second.keyId).revokedAt).toBeDefined();
    expect(JSON.stringify(listed)).not.toContain(first.key);

    // AUTH_MODE is left to its default, which is apikey with MONGODB_URI set.
    const server = await startServer({ env: { ...env, AUTH_MODE: "" } });
    try {
      const client = createClient(
        AgentService,
        createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
      );
      const page = await client.listAgents({}, { headers: { authorization: `Bearer ${first.key}` } });
      expect(page.success).toBe(true);
      await expect(
        client.listAgents({}, { headers: { authorization: `Bearer ${second.key}` } }),
      ).rejects.toThrow(/unauthenticated/);
      await expect(client.listAgents({})).rejects.toThrow(/unauthenticated/);
    } finally {
      await server.close();
    }
  });

  it("explains that without MongoDB keys live in the server, and refuses bad input by name", async () => {
    const memory = await keysCli(["list"], {}).catch((error: { code: number; stderr: string }) => error);
    expect(memory).toMatchObject({ code: 2 });
    expect((memory as { stderr: string }).stderr).toContain("ADMIN_API_KEY");
    const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DB: `keys_${randomBytes(3).toString("hex")}` };
    const bad = await keysCli(["create", "--owner", "erin", "--scopes", "agents:root"], env).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(bad).toMatchObject({ code: 1 });
    expect((bad as { stderr: string }).stderr).toContain("scopes[0] must be one of");
  });

  it("revokes an id that starts with '-' given as --id=… or after --, and makes no such ids", async () => {
    const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DB: `keys_${randomBytes(3).toString("hex")}` };
    // Ids made before they were kept from starting with "-" still exist; such an id is unknown
    // here, and the point is that the command line reads it as an id, not as an option.
    for (const args of [
      ["revoke", "--id=-dVosWw04xy"],
      ["revoke", "--", "-dVosWw04xy"],
    ]) {
      expect(JSON.parse((await keysCli(args, env)).stdout)).toEqual({ keyId: "-dVosWw04xy", revoked: false });
    }
    // 1 fresh id in 64 would start with "-"; 2,000 of them all miss it by about 1 in 10^14.
    const ids = Array.from({ length: 2_000 }, () => newApiKey().keyId);
    expect(ids.filter((id) => id.startsWith("-"))).toEqual([]);
    expect(new Set(ids.map((id) => id[0])).size).toBeGreaterThan(32);
  });
});
