/**
 * What a first start tells someone who has not read the configuration table: the real process,
 * started as `npm start`, `docker run` (NODE_ENV=production) or `MONGODB_URI=… npm start` would
 * start it. Each situation that answers every call with 401, or cannot start at all, says in its
 * log what to do next.
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:net";
import { afterAll, describe, expect, inject, it } from "vitest";
import { type MainProcess, spawnMain, startMain } from "./support/main-process.ts";

const running: MainProcess[] = [];
afterAll(() => {
  for (const main of running) main.kill();
});

const warnings = (main: MainProcess) =>
  main
    .logLines()
    .filter((l) => l.level === 40)
    .map((l) => String(l.msg));

describe("the first start says what to do", () => {
  it("in a container without ADMIN_API_KEY: keys are required and none exists", async () => {
    // What the image sets; AUTH_MODE is left to its default.
    const main = await startMain({ NODE_ENV: "production", AUTH_MODE: "" });
    running.push(main);
    const hint = warnings(main).find((m) => m.includes("API keys are required"));
    expect(hint).toMatch(/every call is refused with 401/);
    expect(hint).toContain("ADMIN_API_KEY");
    expect(hint).toContain("docker run -e ADMIN_API_KEY");
    const answer = await fetch(`http://127.0.0.1:${main.port}/v1/agents`);
    expect(answer.status).toBe(401);
    main.kill();
  });

  it("with ADMIN_API_KEY, nothing to warn of", async () => {
    const main = await startMain({ NODE_ENV: "production", AUTH_MODE: "", ADMIN_API_KEY: "k".repeat(40) });
    running.push(main);
    expect(warnings(main).filter((m) => m.includes("API keys"))).toEqual([]);
    main.kill();
  });

  it("with MONGODB_URI and no key in the database: npm run keys, or ADMIN_API_KEY", async () => {
    const env = { MONGODB_URI: inject("mongoUri"), MONGODB_DB: `hints_${randomBytes(3).toString("hex")}` };
    const main = await startMain({ ...env, AUTH_MODE: "" });
    running.push(main);
    const line = await main.waitForLog((l) => String(l.msg).includes("the database holds none yet"));
    expect(line.level).toBe(40);
    expect(line.msg).toContain("npm run keys -- create --owner NAME");
    expect(line.msg).toContain("ADMIN_API_KEY");
    main.kill();
  });

  it("with PORT in use: one line naming PORT, no stack trace", async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as { port: number }).port;
    try {
      const main = spawnMain({ PORT: String(port), HOST: "127.0.0.1" });
      running.push(main);
      expect((await main.exited).code).toBe(1);
      const fatal = main.logLines().find((l) => l.level === 60);
      expect(fatal?.msg).toBe(
        `PORT ${port} is in use on 127.0.0.1: stop what serves there (another npm start?) or set PORT to another port`,
      );
      expect(JSON.stringify(fatal)).not.toContain("stack");
    } finally {
      holder.close();
    }
  });
});
