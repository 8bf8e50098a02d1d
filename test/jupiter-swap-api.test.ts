/**
 * The Swap API adapter against a tiny real HTTP server on loopback, answering what each test sets:
 * the query and headers it sends, the parse of an answer shaped like Jupiter's Swap API v2
 * `/build` (dev.jup.ag/docs/swap/build), and every malformed or hostile answer it must refuse
 * without passing upstream text on.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import {
  createJupiterSwapApi,
  type JupiterSwapApiOptions,
  NoRouteError,
  type SwapApi,
  SwapApiUnavailableError,
  type SwapBuildRequest,
} from "../src/token/jupiter-swap-api.ts";
import { useCleanups } from "./support/cleanups.ts";

const cleanup = useCleanups();

const SOL = "So11111111111111111111111111111111111111112";
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const JUPITER_PROGRAM = "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4";
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const ATA_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
const TAKER = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const PAYER = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T";
const DESTINATION = "7UX2i7SucgLMQcfZ75s3VXmZZY4YRUyJN9X1RgfMoDUi";
const VAULT = "3LoAYHuSd7Gh8d7RTFnhvYtiTiefdZ5ByamU42vkzd76";
const TABLE = "GxS6FiQ3mNnAar9HGQ6mxP7t6FcwmHkU7peSeQDUHmpN";
const API_KEY = "secret-key-0123456789";
const HOSTILE = "<script>alert('owned')</script>";

const request: SwapBuildRequest = {
  inputMint: SOL,
  outputMint: USDC,
  amount: 1_000_000_000n,
  taker: TAKER,
  payer: PAYER,
  destinationTokenAccount: DESTINATION,
  slippageBps: 50,
};

const b64 = (bytes: number[]): string => Buffer.from(bytes).toString("base64");
/** SetComputeUnitPrice(12345): tag 3, u64 little-endian. */
const unitPrice = b64([3, 0x39, 0x30, 0, 0, 0, 0, 0, 0]);
/** SetComputeUnitLimit(1_400_000): tag 2, u32 little-endian. */
const unitLimit = b64([2, 0xc0, 0x5c, 0x15, 0]);

/** An answer shaped like the example in Jupiter's /build docs. */
function realisticAnswer(): Record<string, unknown> {
  return {
    inputMint: SOL,
    outputMint: USDC,
    inAmount: "1000000000",
    outAmount: "147480000",
    otherAmountThreshold: "146742600",
    swapMode: "ExactIn",
    slippageBps: 50,
    priceImpactPct: "0.0001234",
    routePlan: [
      {
        swapInfo: {
          ammKey: VAULT,
          label: "Meteora DLMM",
          inputMint: SOL,
          outputMint: USDC,
          inAmount: "1000000000",
          outAmount: "147480000",
          feeAmount: "100000",
          feeMint: SOL,
        },
        percent: 100,
        bps: 10000,
      },
    ],
    computeBudgetInstructions: [
      { programId: COMPUTE_BUDGET, accounts: [], data: unitLimit },
      { programId: COMPUTE_BUDGET, accounts: [], data: unitPrice },
    ],
    setupInstructions: [
      {
        programId: ATA_PROGRAM,
        accounts: [
          { pubkey: PAYER, isSigner: true, isWritable: true },
          { pubkey: DESTINATION, isSigner: false, isWritable: true },
          { pubkey: TAKER, isSigner: false, isWritable: false },
          { pubkey: USDC, isSigner: false, isWritable: false },
          { pubkey: "11111111111111111111111111111111", isSigner: false, isWritable: false },
          { pubkey: TOKEN_PROGRAM, isSigner: false, isWritable: false },
        ],
        data: b64([1]),
      },
    ],
    swapInstruction: {
      programId: JUPITER_PROGRAM,
      accounts: [
        { pubkey: TOKEN_PROGRAM, isSigner: false, isWritable: false },
        { pubkey: TAKER, isSigner: true, isWritable: false },
        { pubkey: DESTINATION, isSigner: false, isWritable: true },
        { pubkey: VAULT, isSigner: false, isWritable: true },
      ],
      data: b64([0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a, 1, 2, 3]),
    },
    cleanupInstruction: null,
    otherInstructions: [],
    addressesByLookupTableAddress: { [TABLE]: [VAULT, USDC] },
    blockhashWithMetadata: { blockhash: [1, 2, 3], lastValidBlockHeight: 1000 },
  };
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

interface Upstream {
  readonly url: string;
  readonly requests: { readonly query: URLSearchParams; readonly headers: http.IncomingHttpHeaders }[];
  handle: Handler;
}

async function startUpstream(handle: Handler): Promise<Upstream> {
  const upstream: Upstream = { url: "", requests: [], handle };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    upstream.requests.push({ query: url.searchParams, headers: req.headers });
    if (url.pathname !== "/swap/v2/build") {
      res.writeHead(404).end();
      return;
    }
    upstream.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return Object.assign(upstream, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/swap/v2`,
  });
}

const json =
  (body: unknown, status = 200): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };

function apiFor(upstream: Upstream, options: Partial<JupiterSwapApiOptions> = {}): SwapApi {
  return createJupiterSwapApi({ baseUrl: upstream.url, timeoutMs: 5_000, maxBytes: 64 * 1024, ...options });
}

/** The build's failure, which must be one of the port's errors and carry no upstream text. */
async function failureOf(api: SwapApi, req: SwapBuildRequest = request): Promise<Error> {
  const error = await api.build(req).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  const message = (error as Error).message;
  expect(message).not.toContain(HOSTILE);
  expect(message).not.toContain(API_KEY);
  expect(message).not.toContain("127.0.0.1");
  return error as Error;
}

async function unavailable(api: SwapApi, req: SwapBuildRequest = request): Promise<SwapApiUnavailableError> {
  const error = await failureOf(api, req);
  expect(error).toBeInstanceOf(SwapApiUnavailableError);
  return error as SwapApiUnavailableError;
}

describe("the request", () => {
  it("sends every documented parameter, wrapAndUnwrapSol=false and the api key", async () => {
    const upstream = await startUpstream(json(realisticAnswer()));
    await apiFor(upstream, { apiKey: API_KEY }).build({ ...request, maxAccounts: 40 });
    expect(upstream.requests).toHaveLength(1);
    const [{ query, headers }] = upstream.requests as [Upstream["requests"][number]];
    expect(Object.fromEntries(query)).toEqual({
      inputMint: SOL,
      outputMint: USDC,
      amount: "1000000000",
      taker: TAKER,
      payer: PAYER,
      destinationTokenAccount: DESTINATION,
      slippageBps: "50",
      wrapAndUnwrapSol: "false",
      maxAccounts: "40",
    });
    expect(headers["x-api-key"]).toBe(API_KEY);
  });

  it("leaves out maxAccounts and the key when they are not given", async () => {
    const upstream = await startUpstream(json(realisticAnswer()));
    await apiFor(upstream).build(request);
    const [{ query, headers }] = upstream.requests as [Upstream["requests"][number]];
    expect(query.has("maxAccounts")).toBe(false);
    expect(headers["x-api-key"]).toBeUndefined();
  });

  it("goes through the fetch it is given", async () => {
    const upstream = await startUpstream(json(realisticAnswer()));
    const called: string[] = [];
    const counting: typeof fetch = (input, init) => {
      called.push(String(input));
      return fetch(input, init);
    };
    await apiFor(upstream, { fetch: counting }).build(request);
    expect(called).toHaveLength(1);
    expect(called[0]).toMatch(/\/swap\/v2\/build\?/);
  });

  it("refuses a request built wrong before calling Jupiter", async () => {
    const upstream = await startUpstream(json(realisticAnswer()));
    const api = apiFor(upstream);
    await expect(api.build({ ...request, taker: "not an address" })).rejects.toThrow(/taker/);
    await expect(api.build({ ...request, amount: 0n })).rejects.toThrow(/amount/);
    await expect(api.build({ ...request, slippageBps: 10_001 })).rejects.toThrow(/slippageBps/);
    await expect(api.build({ ...request, maxAccounts: 0 })).rejects.toThrow(/maxAccounts/);
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("a realistic answer", () => {
  it("is parsed into checked values", async () => {
    const upstream = await startUpstream(json(realisticAnswer()));
    const build = await apiFor(upstream).build(request);
    expect(build.inAmount).toBe(1_000_000_000n);
    expect(build.outAmount).toBe(147_480_000n);
    expect(build.minimumOut).toBe(146_742_600n);
    expect(build.slippageBps).toBe(50);
    expect(build.priceImpactPct).toBe("0.0001234");
    expect(build.routeLabels).toEqual(["Meteora DLMM"]);
    expect(build.computeUnitPrice).toBe(12345n);
    expect(build.setupInstructions).toHaveLength(1);
    expect(build.setupInstructions[0]?.programAddress).toBe(ATA_PROGRAM);
    expect(build.swapInstruction.programAddress).toBe(JUPITER_PROGRAM);
    expect(build.swapInstruction.accounts[1]).toEqual({ address: TAKER, signer: true, writable: false });
    expect([...build.swapInstruction.data]).toEqual([
      0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a, 1, 2, 3,
    ]);
    expect(build.cleanupInstruction).toBeUndefined();
    expect(build.otherInstructions).toEqual([]);
    expect({ ...build.lookupTables }).toEqual({ [TABLE]: [VAULT, USDC] });
  });

  it("without the optional fields gives empty lists and no unit price", async () => {
    const answer = realisticAnswer();
    for (const field of [
      "computeBudgetInstructions",
      "setupInstructions",
      "otherInstructions",
      "cleanupInstruction",
      "addressesByLookupTableAddress",
      "priceImpactPct",
      "routePlan",
    ]) {
      delete answer[field];
    }
    const upstream = await startUpstream(json(answer));
    const build = await apiFor(upstream).build(request);
    expect(build.computeUnitPrice).toBeUndefined();
    expect(build.setupInstructions).toEqual([]);
    expect(build.lookupTables).toEqual({});
    expect(build.routeLabels).toEqual([]);
    expect(build.priceImpactPct).toBe("");
  });

  it("keeps a cleanup instruction, and shows no label outside the expected alphabet", async () => {
    const answer = realisticAnswer();
    answer.cleanupInstruction = {
      programId: TOKEN_PROGRAM,
      accounts: [{ pubkey: DESTINATION, isSigner: false, isWritable: true }],
      data: b64([9]),
    };
    answer.routePlan = [{ swapInfo: { label: HOSTILE } }, { swapInfo: { label: "Raydium CLMM" } }];
    const upstream = await startUpstream(json(answer));
    const build = await apiFor(upstream).build(request);
    expect(build.cleanupInstruction?.programAddress).toBe(TOKEN_PROGRAM);
    expect(build.routeLabels).toEqual(["unknown", "Raydium CLMM"]);
  });
});

describe("a malformed or hostile answer", () => {
  /** Changes the answer in place, or returns another answer to send instead. */
  type Mutation = (answer: Record<string, unknown>) => unknown;
  const swap = (answer: Record<string, unknown>) => answer.swapInstruction as Record<string, unknown>;
  const entry = (items: unknown, i: number): Record<string, unknown> => {
    const item = (items as Record<string, unknown>[])[i];
    if (item === undefined) throw new Error(`the fixture has no entry ${i}`);
    return item;
  };
  const cases: [string, Mutation][] = [
    [
      "missing swapInstruction",
      (a) => {
        delete a.swapInstruction;
      },
    ],
    [
      "missing inAmount",
      (a) => {
        delete a.inAmount;
      },
    ],
    [
      "missing outAmount",
      (a) => {
        delete a.outAmount;
      },
    ],
    [
      "missing otherAmountThreshold",
      (a) => {
        delete a.otherAmountThreshold;
      },
    ],
    [
      "missing slippageBps",
      (a) => {
        delete a.slippageBps;
      },
    ],
    [
      "a fractional amount",
      (a) => {
        a.outAmount = "147.5";
      },
    ],
    [
      "a negative amount",
      (a) => {
        a.outAmount = "-1";
      },
    ],
    [
      "an amount as a JSON number",
      (a) => {
        a.inAmount = 1000000000;
      },
    ],
    [
      "an amount past u64",
      (a) => {
        a.outAmount = "18446744073709551616";
      },
    ],
    [
      "hostile text for an amount",
      (a) => {
        a.otherAmountThreshold = HOSTILE;
      },
    ],
    [
      "slippageBps as a string",
      (a) => {
        a.slippageBps = "50";
      },
    ],
    [
      "a programId that is not base58",
      (a) => {
        swap(a).programId = HOSTILE;
      },
    ],
    [
      "a pubkey of 31 bytes",
      (a) => {
        entry(swap(a).accounts, 0).pubkey = "1111111111111111111111111111111";
      },
    ],
    [
      "an account without isSigner",
      (a) => {
        delete entry(swap(a).accounts, 1).isSigner;
      },
    ],
    [
      "isWritable as a string",
      (a) => {
        entry(swap(a).accounts, 1).isWritable = "true";
      },
    ],
    [
      "data that is not base64",
      (a) => {
        swap(a).data = "@@not base64@@";
      },
    ],
    [
      "data with base64url characters",
      (a) => {
        swap(a).data = "-_-_";
      },
    ],
    [
      "data past a transaction's size",
      (a) => {
        swap(a).data = Buffer.alloc(2000).toString("base64");
      },
    ],
    [
      "accounts that are not a list",
      (a) => {
        swap(a).accounts = {};
      },
    ],
    [
      "setupInstructions that are not a list",
      (a) => {
        a.setupInstructions = "x";
      },
    ],
    [
      "too many instructions",
      (a) => {
        a.otherInstructions = Array.from({ length: 40 }, () => swap(a));
      },
    ],
    [
      "a foreign program among the compute budget instructions",
      (a) => {
        (a.computeBudgetInstructions as unknown[])[0] = swap(a);
      },
    ],
    [
      "a unit price of the wrong length",
      (a) => {
        entry(a.computeBudgetInstructions, 1).data = b64([3, 1]);
      },
    ],
    [
      "a lookup table named __proto__",
      (a) => {
        a.addressesByLookupTableAddress = JSON.parse('{"__proto__":[]}');
      },
    ],
    [
      "a lookup table holding hostile text",
      (a) => {
        a.addressesByLookupTableAddress = { [TABLE]: [HOSTILE] };
      },
    ],
    [
      "lookup tables as a list",
      (a) => {
        a.addressesByLookupTableAddress = [TABLE];
      },
    ],
    [
      "a price impact that is not a number",
      (a) => {
        a.priceImpactPct = HOSTILE;
      },
    ],
    [
      "a route step without swapInfo",
      (a) => {
        a.routePlan = [{}];
      },
    ],
    [
      "another input mint",
      (a) => {
        a.inputMint = DESTINATION;
      },
    ],
    [
      "another output mint",
      (a) => {
        a.outputMint = SOL;
      },
    ],
    [
      "an inAmount other than the amount asked for",
      (a) => {
        a.inAmount = "999999999";
      },
    ],
    ["a list for an answer", () => [realisticAnswer()]],
    ["null for an answer", () => null],
  ];
  for (const [name, mutate] of cases) {
    it(`is refused as bad_response: ${name}`, async () => {
      const answer = realisticAnswer();
      const replaced = mutate(answer);
      const upstream = await startUpstream(json(replaced === undefined ? answer : replaced));
      const error = await unavailable(apiFor(upstream));
      expect(error.reason).toBe("bad_response");
    });
  }

  it("is refused when it is not JSON", async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" }).end(`<html>${HOSTILE}</html>`);
    });
    expect((await unavailable(apiFor(upstream))).reason).toBe("bad_response");
  });
});

describe("a huge answer", () => {
  it("declared in Content-Length is refused before its body is read", async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(2 * 1024 * 1024) });
      res.write("[");
    });
    expect((await unavailable(apiFor(upstream))).reason).toBe("too_large");
  });

  it("streamed without a length is refused within maxBytes, not read to its end", async () => {
    const total = 2 * 1024 * 1024;
    let written = 0;
    let writtenWhenClosed: number | undefined;
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.on("close", () => {
        writtenWhenClosed = written;
      });
      // Twice the bound, then nothing more until the client hangs up: a client that read to the
      // end before judging the size would wait here until its timeout instead of refusing.
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      for (let i = 0; i < 8; i++) {
        res.write(chunk);
        written += chunk.length;
      }
    });
    expect((await unavailable(apiFor(upstream, { maxBytes: 64 * 1024 }))).reason).toBe("too_large");
    await expect.poll(() => writtenWhenClosed).toBe(128 * 1024);
    expect(writtenWhenClosed).toBeLessThan(total);
  });
});

describe("an answer that never comes", () => {
  const never: Handler = () => {};

  it("is refused at timeoutMs", async () => {
    const upstream = await startUpstream(never);
    expect((await unavailable(apiFor(upstream, { timeoutMs: 300 }))).reason).toBe("timeout");
  });

  it("is refused when the caller's signal aborts", async () => {
    const upstream = await startUpstream(never);
    const controller = new AbortController();
    const pending = unavailable(apiFor(upstream, { timeoutMs: 60_000 }), {
      ...request,
      signal: controller.signal,
    });
    await expect.poll(() => upstream.requests.length).toBe(1);
    controller.abort();
    expect((await pending).reason).toBe("aborted");
  });

  it("is not asked for when the signal has already aborted", async () => {
    const upstream = await startUpstream(never);
    const error = await unavailable(apiFor(upstream), { ...request, signal: AbortSignal.abort() });
    expect(error.reason).toBe("aborted");
    expect(upstream.requests).toHaveLength(0);
  });
});

describe("no route", () => {
  const noRouteAnswers: [string, number, unknown][] = [
    [
      "COULD_NOT_FIND_ANY_ROUTE",
      400,
      { error: "Could not find any route", errorCode: "COULD_NOT_FIND_ANY_ROUTE" },
    ],
    ["NO_ROUTES_FOUND", 400, { error: "No routes found", errorCode: "NO_ROUTES_FOUND" }],
    [
      "TOKEN_NOT_TRADABLE",
      400,
      { error: `The token ${USDC} is not tradable`, errorCode: "TOKEN_NOT_TRADABLE" },
    ],
    ["only an error text", 404, { error: "No routes found for the input and output mints" }],
  ];
  for (const [name, status, body] of noRouteAnswers) {
    it(`is a NoRouteError: ${name}`, async () => {
      const upstream = await startUpstream(json(body, status));
      const error = await failureOf(apiFor(upstream));
      expect(error).toBeInstanceOf(NoRouteError);
      expect(error.message).not.toContain(USDC);
    });
  }

  it("does not open the circuit, however often it comes", async () => {
    const upstream = await startUpstream(json({ errorCode: "COULD_NOT_FIND_ANY_ROUTE" }, 400));
    const api = apiFor(upstream, { breaker: { failures: 2, openMs: 60_000 } });
    for (let i = 0; i < 4; i++) expect(await failureOf(api)).toBeInstanceOf(NoRouteError);
    upstream.handle = json(realisticAnswer());
    expect((await api.build(request)).outAmount).toBe(147_480_000n);
  });

  it("is told from another refusal, whose text is not passed on", async () => {
    const upstream = await startUpstream(json({ error: HOSTILE, errorCode: "INVALID_TAKER" }, 400));
    const error = await unavailable(apiFor(upstream));
    expect(error.reason).toBe("rejected");
    expect(error.cause).toBeUndefined();
  });

  it("is not read past maxBytes", async () => {
    const upstream = await startUpstream(
      json({ error: "x".repeat(100_000), errorCode: "NO_ROUTES_FOUND" }, 400),
    );
    expect((await unavailable(apiFor(upstream, { maxBytes: 1024 }))).reason).toBe("too_large");
  });
});

describe("an unwell upstream", () => {
  it("5xx is retryable as http_error, its body not passed on", async () => {
    const upstream = await startUpstream(json({ error: HOSTILE }, 503));
    expect((await unavailable(apiFor(upstream))).reason).toBe("http_error");
  });

  it("429 is rate_limited with its Retry-After", async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(429, { "retry-after": "7" }).end(HOSTILE);
    });
    const error = await unavailable(apiFor(upstream));
    expect(error.reason).toBe("rate_limited");
    expect(error.retryAfterMs).toBe(7000);
  });

  it("a refused connection is unreachable", async () => {
    const api = createJupiterSwapApi({
      baseUrl: "http://127.0.0.1:1/swap/v2",
      timeoutMs: 5_000,
      maxBytes: 1024,
    });
    expect((await unavailable(api)).reason).toBe("unreachable");
  });

  it("takes maxCalls builds at once (in flight and waiting), and refuses one more as overloaded", async () => {
    // An upstream that answers nothing until the test lets it: every call stays in flight.
    const held: http.ServerResponse[] = [];
    const upstream = await startUpstream((_req, res) => {
      held.push(res);
    });
    const api = apiFor(upstream, { maxConcurrency: 2, maxQueued: 1 });
    // What the scheduler bounds swap runs by (see Executor.upstreamOf).
    expect(api.maxCalls).toBe(3);
    const taken = Array.from({ length: 3 }, () =>
      api.build(request).then(
        () => "answered",
        () => "failed",
      ),
    );
    expect((await unavailable(api)).reason).toBe("overloaded");
    for (let i = 0; i < 100 && held.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    for (const res of held.splice(0)) json(realisticAnswer())(undefined as never, res);
    for (let i = 0; i < 100 && held.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    for (const res of held.splice(0)) json(realisticAnswer())(undefined as never, res);
    expect(await Promise.all(taken)).toEqual(["answered", "answered", "answered"]);
  });

  it("consecutive faults open the circuit, and then no call is made", async () => {
    const upstream = await startUpstream(json({}, 500));
    const api = apiFor(upstream, { breaker: { failures: 2, openMs: 60_000 } });
    await unavailable(api);
    await unavailable(api);
    expect((await unavailable(api)).reason).toBe("circuit_open");
    expect(upstream.requests).toHaveLength(2);
  });
});
