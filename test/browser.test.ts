import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, ensureChromium } from "./support/chromium.ts";
import { type PageServer, startPageServer } from "./support/page-server.ts";
import { type RunningServer, startServer } from "./support/start-server.ts";

/*
 * A real browser (Debian's headless Chromium, installed by the test setup when missing): a page on
 * another origin calls the service through @connectrpc/connect-web (Connect and gRPC-Web) and
 * through fetch on the REST paths, CORS allowing it; a page on an origin not configured is
 * refused; and /docs renders every operation of the OpenAPI document from the service's own files.
 */

const PACKAGES = ["@bufbuild/protobuf", "@connectrpc/connect", "@connectrpc/connect-web"];
const TRANSFER = {
  source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};

let browser: Browser;
let allowed: PageServer;
let other: PageServer;
let service: RunningServer;

beforeAll(async () => {
  const executablePath = await ensureChromium();
  allowed = await startPageServer({ packages: PACKAGES });
  other = await startPageServer({ packages: PACKAGES });
  service = await startServer({ env: { CORS_ORIGINS: allowed.origin } });
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, timeout: 30_000 });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([allowed?.close(), other?.close(), service?.close()]);
});

/** A fresh page that fails the test on any uncaught error in it. */
async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const page = await (await browser.newContext()).newPage();
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  return { page, errors };
}

describe("a page on another origin", () => {
  it("calls the service through connect-web (Connect and gRPC-Web) and through fetch on REST paths", async () => {
    const { page, errors } = await newPage();
    await page.goto(`${allowed.origin}/`);
    // A string, not a function: the test runner would rewrite a function's dynamic import.
    const results = (await page.evaluate(
      `import("/test/browser/browser-client.ts").then((m) => m.callService(${JSON.stringify(service.baseUrl)}))`,
    )) as Record<string, Record<string, unknown>>;

    for (const transport of ["connect", "connect (GET)", "connect (binary)", "grpc-web"]) {
      expect(results[transport], transport).toEqual({
        watchedSymbols: ["SOL"],
        firstEvent: "agent.created",
        symbols: ["SOL"],
        agentId: expect.stringMatching(/^[\w-]{22}$/),
        config: TRANSFER,
        deleted: true,
        error: { code: "NotFound", message: expect.stringContaining("not found") },
      });
    }
    const rest = results.rest as Record<string, { status: number; requestId: string | null; json: never }>;
    expect(rest.sse).toEqual({ id: "1", type: "agent.created" });
    expect(rest.prices).toMatchObject({
      status: 200,
      requestId: "browser-GET",
      json: { data: [{ symbol: "USDC" }] },
    });
    expect(rest.created).toMatchObject({
      status: 200,
      requestId: "browser-POST",
      json: { data: { status: "pending" } },
    });
    expect(rest.got).toMatchObject({ status: 200, json: { data: { config: TRANSFER } } });
    expect(rest.deleted).toMatchObject({
      status: 200,
      requestId: "browser-DELETE",
      json: { data: { deleted: true } },
    });
    expect(rest.badLimit).toMatchObject({ status: 400, json: { code: "invalid_argument" } });
    expect(JSON.stringify(rest.badLimit?.json)).toContain('"field":"limit"');
    // The browser reports the error answers asked for above as failed loads; nothing else may fail.
    expect(errors.filter((e) => !e.startsWith("Failed to load resource"))).toEqual([]);

    // Each way in reached the service as what it is.
    const protocols = new Set(service.logs.map((line) => line.protocol));
    for (const protocol of ["connect+json", "connect+proto", "grpc-web+proto", "rest+json"])
      expect(protocols).toContain(protocol);
  });

  it("is refused when its origin is not configured", async () => {
    const { page } = await newPage();
    await page.goto(`${other.origin}/`);
    const outcome = await page.evaluate(
      (url) =>
        fetch(`${url}/v1/tokens/prices`).then(
          (r) => `answered ${r.status}`,
          (e: Error) => e.name,
        ),
      service.baseUrl,
    );
    expect(outcome).toBe("TypeError");
  });
});

describe("a page on another origin and the local chain", () => {
  it("calls the chain's JSON-RPC port with fetch (a preflighted POST), as a dApp does", async () => {
    const chainUrl = service.localChain?.url as string;
    expect(chainUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { page, errors } = await newPage();
    await page.goto(`${other.origin}/`);
    // application/json and a custom header make the browser send a preflight first.
    const answer = await page.evaluate(
      (url) =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", "solana-client": "js/browser-test" },
          body: JSON.stringify([
            { jsonrpc: "2.0", id: 1, method: "getHealth" },
            { jsonrpc: "2.0", id: 2, method: "getLatestBlockhash", params: [{ commitment: "confirmed" }] },
          ]),
        }).then(
          async (r) => ({ status: r.status, body: await r.json() }),
          (e: Error) => ({ status: 0, body: e.name }),
        ),
      chainUrl,
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([
      { jsonrpc: "2.0", result: "ok", id: 1 },
      {
        jsonrpc: "2.0",
        result: {
          context: { apiVersion: expect.any(String), slot: expect.any(Number) },
          value: { blockhash: expect.any(String), lastValidBlockHeight: expect.any(Number) },
        },
        id: 2,
      },
    ]);
    expect(errors).toEqual([]);
  });
});

describe("/docs", () => {
  it("renders every operation of the OpenAPI document, from the service's own files", async () => {
    const openApi = JSON.parse(
      readFileSync(new URL("../gen/openapi/openapi.json", import.meta.url), "utf8"),
    ) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.entries(openApi.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((verb) => `${verb.toUpperCase()} ${path}`),
    );
    const { page, errors } = await newPage();
    const requested: string[] = [];
    page.on("request", (request) => requested.push(request.url()));
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${service.baseUrl}/docs`);
    // Polled from the test: waitForFunction's own polling evaluates its predicate with eval in the
    // page, which the page's CSP (script-src 'self') refuses whenever the first check is too early,
    // as it was on a loaded machine. $$eval is called through the protocol, which CSP does not govern.
    await expect
      .poll(() => page.$$eval(".opblock", (blocks) => blocks.length), { timeout: 15_000 })
      .toBeGreaterThanOrEqual(operations.length);
    const rendered = await page.$$eval(".opblock", (blocks) =>
      blocks.map((block) => {
        const method = block.querySelector(".opblock-summary-method")?.textContent ?? "";
        const path = block.querySelector(".opblock-summary-path")?.getAttribute("data-path") ?? "";
        return `${method.toUpperCase()} ${path}`;
      }),
    );
    expect(rendered.sort()).toEqual(operations.sort());
    expect(await page.textContent("body")).toContain("GetTokenTransactions returns a token's transactions");

    const dir = mkdtempSync(join(tmpdir(), "docs-screenshot-"));
    const screenshot = join(dir, "docs.png");
    await page.screenshot({ path: screenshot, fullPage: true });
    process.stderr.write(`screenshot of /docs: ${screenshot}\n`);
    expect(readFileSync(screenshot).byteLength).toBeGreaterThan(10_000);

    // No CDN: everything the page loaded came from the service itself.
    expect(requested.length).toBeGreaterThan(0);
    for (const url of requested) expect(url.startsWith(`${service.baseUrl}/`), url).toBe(true);
    expect(errors).toEqual([]);
  });
});
