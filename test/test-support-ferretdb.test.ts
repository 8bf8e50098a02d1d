/**
 * The test FerretDB says how it ended when nobody asked it to: the shared server's end must name
 * its cause in the failing tests' messages (test/support/mongo-global-setup.ts), not leave them
 * with a driver's connection error.
 */
import { MongoClient } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { type FerretdbExit, type FerretdbServer, startFerretdb } from "./support/ferretdb.ts";

const servers: FerretdbServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

/** The process's pid; never 0 or undefined, which process.kill would take as the whole process group. */
function pidOf(server: FerretdbServer): number {
  const pid = server.pid;
  if (pid === undefined || pid <= 0) throw new Error("the FerretDB test server has no pid");
  return pid;
}

function nextExit(server: FerretdbServer): Promise<FerretdbExit> {
  return new Promise((resolve) => server.onUnexpectedExit(resolve));
}

describe("the test FerretDB's unexpected end", () => {
  it("a SIGTERM from elsewhere is reported with the signal FerretDB logged and its exit code", async () => {
    const server = await startFerretdb();
    servers.push(server);
    const ended = nextExit(server);
    process.kill(pidOf(server), "SIGTERM");
    const exit = await ended;
    expect(exit.port).toBe(server.port);
    expect(exit.code).toBe(0);
    expect(exit.output).toMatch(/received terminated \(parent pid \d+\), shutting down/);
  });

  it("a SIGKILL is reported as the signal", async () => {
    const server = await startFerretdb();
    servers.push(server);
    const ended = nextExit(server);
    process.kill(pidOf(server), "SIGKILL");
    expect((await ended).signal).toBe("SIGKILL");
  });

  it("a Go crash report longer than the kept tail still says what crashed, from its first line", async () => {
    const server = await startFerretdb();
    servers.push(server);
    // 60 open connections: a goroutine dump of every one of them, far longer than the tail kept.
    const client = new MongoClient(server.uri, { minPoolSize: 60, maxPoolSize: 60 });
    try {
      await Promise.all(Array.from({ length: 60 }, () => client.db("crash").command({ ping: 1 })));
      const ended = nextExit(server);
      // Go's runtime answers SIGQUIT as it answers a fatal error: the reason, every goroutine, code 2.
      process.kill(pidOf(server), "SIGQUIT");
      const exit = await ended;
      expect(exit.code).toBe(2);
      expect(exit.output.startsWith("SIGQUIT: quit"), exit.output.slice(0, 200)).toBe(true);
      expect(exit.output).toMatch(/\[\.\.\. \d+ characters left out \.\.\.\]\n/);
    } finally {
      await client.close(true);
    }
  });

  it("an end asked for (kill, restart, stop) is no surprise", async () => {
    const server = await startFerretdb();
    servers.push(server);
    const surprises: FerretdbExit[] = [];
    server.onUnexpectedExit((exit) => surprises.push(exit));
    await server.kill();
    await server.restart();
    await server.restart();
    await server.stop();
    expect(surprises).toEqual([]);
  });
});
