/**
 * Graceful shutdown of the real process (`src/main.ts`): a call in flight when SIGTERM arrives
 * completes with its full answer, new connections are refused at once, and the process exits 0;
 * a call that never completes is cut after SHUTDOWN_TIMEOUT_MS and does not hold the process.
 *
 * "In flight" is made exact by sending only half of the request body before the signal: the
 * server has the request (and cannot have answered it) until the rest arrives after the signal.
 */
import * as http from "node:http";
import * as http2 from "node:http2";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { catalogPriceJson, catalogToken } from "./support/catalog-prices.ts";
import { type MainProcess, startMain } from "./support/main-process.ts";

const PATH = "/token.v1.TokenService/GetTokenPrices";
const BODY = Buffer.from(JSON.stringify({ symbol: "SOL" }));
const HALF = Math.floor(BODY.length / 2);
/** Long enough for the server to have parsed the headers and handed the request to the handler. */
const SERVER_HAS_REQUEST_MS = 300;
const AFTER_SIGNAL_MS = 200;
/**
 * How soon the process must exit once nothing is left to answer: loose (it takes milliseconds),
 * but below the 5 s HTTP/1.1 keep-alive timeout, so that an idle kept-alive connection
 * holding the process open is caught.
 */
const EXIT_DEADLINE_MS = 3_000;

const EXPECTED = { success: true, data: [catalogPriceJson(catalogToken("SOL"))] };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const started: MainProcess[] = [];
afterEach(() => {
  for (const main of started.splice(0)) main.kill();
});

async function start(env: Record<string, string> = {}) {
  const main = await startMain(env);
  started.push(main);
  return main;
}

/** Resolves with the exit and how long after `since` it came; fails after the deadline. */
async function exitWithin(main: MainProcess, since: number, deadlineMs = EXIT_DEADLINE_MS) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`still running ${deadlineMs} ms after; stdout:\n${main.stdout()}`)),
      deadlineMs,
    );
  });
  try {
    const exit = await Promise.race([main.exited, timeout]);
    return { ...exit, ms: performance.now() - since };
  } finally {
    clearTimeout(timer);
  }
}

/** Whether a new TCP connection to the port is refused (the listener is closed). */
function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNREFUSED") resolve(true);
      else reject(error);
    });
  });
}

/** The process logged that it stopped cleanly, after the signal. */
function expectCleanStopLogged(main: MainProcess): void {
  const lines = main.logLines();
  expect(
    lines.some((l) => l.msg === "shutting down: finishing calls in flight" && l.signal === "SIGTERM"),
  ).toBe(true);
  expect(lines.some((l) => l.msg === "stopped")).toBe(true);
  expect(main.stderr()).toBe("");
}

describe("graceful shutdown on SIGTERM", () => {
  it("finishes an HTTP/1.1 call in flight, refuses new connections, exits 0", async () => {
    const main = await start();
    // A keep-alive agent, as real clients use: the server must still end the connection.
    const agent = new http.Agent({ keepAlive: true });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port: main.port,
          method: "POST",
          path: PATH,
          agent,
          headers: { "content-type": "application/json", "content-length": String(BODY.length) },
        },
        (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            body += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.write(BODY.subarray(0, HALF));
      void sleep(SERVER_HAS_REQUEST_MS)
        .then(async () => {
          main.child.kill("SIGTERM");
          await sleep(AFTER_SIGNAL_MS);
          expect(main.child.exitCode).toBeNull(); // still serving the call
          expect(await refusesConnections(main.port)).toBe(true);
          req.end(BODY.subarray(HALF));
        })
        .catch(reject);
    });

    const { status, body } = await response;
    const answered = performance.now();
    expect(status).toBe(200);
    expect(JSON.parse(body)).toEqual(EXPECTED);
    const exit = await exitWithin(main, answered);
    agent.destroy();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expectCleanStopLogged(main);
  });

  it("finishes an HTTP/2 call in flight, refuses new connections, exits 0", async () => {
    const main = await start();
    const session = http2.connect(`http://127.0.0.1:${main.port}`);
    session.on("error", () => {}); // GOAWAY and the end of the connection are expected here
    const stream = session.request({
      ":method": "POST",
      ":path": PATH,
      "content-type": "application/json",
      "content-length": String(BODY.length),
    });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      let status = 0;
      let body = "";
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
      });
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        body += chunk;
      });
      stream.on("end", () => resolve({ status, body }));
      stream.on("error", reject);
    });
    stream.write(BODY.subarray(0, HALF));
    await sleep(SERVER_HAS_REQUEST_MS);
    main.child.kill("SIGTERM");
    await sleep(AFTER_SIGNAL_MS);
    expect(main.child.exitCode).toBeNull();
    expect(await refusesConnections(main.port)).toBe(true);
    stream.end(BODY.subarray(HALF));

    const { status, body } = await response;
    const answered = performance.now();
    expect(status).toBe(200);
    expect(JSON.parse(body)).toEqual(EXPECTED);
    const exit = await exitWithin(main, answered);
    session.close();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expectCleanStopLogged(main);
  });

  it("does not wait for an idle HTTP/1.1 keep-alive connection", async () => {
    const main = await start();
    const agent = new http.Agent({ keepAlive: true });
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: "127.0.0.1",
          port: main.port,
          method: "POST",
          path: PATH,
          agent,
          headers: { "content-type": "application/json", "content-length": String(BODY.length) },
        },
        (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        },
      );
      req.on("error", reject);
      req.end(BODY);
    });
    expect(status).toBe(200);
    await sleep(100); // the connection is back in the agent's pool, idle

    const signalled = performance.now();
    main.child.kill("SIGTERM");
    const exit = await exitWithin(main, signalled);
    agent.destroy();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expectCleanStopLogged(main);
  });

  it("does not let calls that never complete hold the process past SHUTDOWN_TIMEOUT_MS", async () => {
    const main = await start({ SHUTDOWN_TIMEOUT_MS: "1000" });
    // One hanging call per protocol: the bodies are never completed.
    const h1 = http.request({
      host: "127.0.0.1",
      port: main.port,
      method: "POST",
      path: PATH,
      agent: false,
      headers: { "content-type": "application/json", "content-length": String(BODY.length) },
    });
    const h1Ended = new Promise<string>((resolve) => {
      h1.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      h1.on("response", () => resolve("response"));
    });
    h1.write(BODY.subarray(0, HALF));
    const session = http2.connect(`http://127.0.0.1:${main.port}`);
    session.on("error", () => {});
    const stream = session.request({
      ":method": "POST",
      ":path": PATH,
      "content-type": "application/json",
      "content-length": String(BODY.length),
    });
    const h2Ended = new Promise<string>((resolve) => {
      stream.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      stream.on("close", () => resolve("closed"));
      stream.on("response", () => resolve("response"));
    });
    stream.write(BODY.subarray(0, HALF));
    await sleep(SERVER_HAS_REQUEST_MS);

    const signalled = performance.now();
    main.child.kill("SIGTERM");
    const exit = await exitWithin(main, signalled, 1000 + EXIT_DEADLINE_MS);
    expect(exit).toMatchObject({ code: 0, signal: null });
    // Cut after the timeout, not before: the calls had their chance.
    expect(exit.ms).toBeGreaterThanOrEqual(900);
    // Neither call was answered: their connections were cut.
    expect(await h1Ended).not.toBe("response");
    expect(await h2Ended).not.toBe("response");
    session.destroy();
    expectCleanStopLogged(main);
  });
});
