import { createHash, randomBytes } from "node:crypto";
import * as http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import {
  type Address,
  createSolanaRpc,
  getAddressDecoder,
  getAddressEncoder,
  isAddress,
  some,
} from "@solana/kit";
import {
  AuthorityType,
  getApproveInstructionDataEncoder,
  getSetAuthorityInstructionDataEncoder,
} from "@solana-program/token";
import { getMintDecoder } from "@solana-program/token-2022";
import { associatedTokenAddress } from "../../src/chain/program-address.ts";
import {
  createLocalSwapRoutes,
  LOCAL_ROUTE_COMPUTE_UNIT_PRICE,
  localKeyFromSeed,
  meta,
  noRoute,
  type RoutePool,
  type routeAnswer,
  transferCheckedWire,
  type WireInstruction,
  wire,
} from "../../src/local-chain/index.ts";
import { deployProgram } from "./deploy-program.ts";
import type { AnswerMutator, BuildAnswer } from "./hostile-swap-routes.ts";

/**
 * A local stand-in for Jupiter's Swap API v2 `GET /build` (dev.jup.ag/docs/swap/build) that swaps
 * for real on the embedded local chain: an HTTP wrapper over the product's local route source
 * (src/local-chain/pools/local-swap-routes.ts), on pools of its own made with cheatcodes. Each pool is a constant-product pool whose two vaults are
 * real token accounts (associated token accounts of the pool's own address, made and funded with
 * the `surfnet_setTokenAccount` cheatcode); every quote reads the vaults' balances from the chain,
 * so a quote after a swap reflects the new reserves.
 *
 * The answer's instructions move real tokens when the caller's transaction lands, using only the
 * SPL Token program (on the executor's default allow-list):
 *   - swapInstruction: the taker's `transferChecked` of `amount` from its own account for the
 *     input mint (the delegate's account, which the executor fills first) into the input vault;
 *   - cleanupInstruction: the output vault's `transferChecked` of `outAmount` to
 *     `destinationTokenAccount`, signed by the taker as the vault's delegate: before answering,
 *     the server makes the taker the output vault's delegate for exactly the quoted amount.
 * The hostile modes change one thing each, as a compromised or buggy aggregator might.
 */

export type JupiterSwapServerMode =
  /** The answer described above. */
  | "honest"
  /** Also moves input tokens out of the owner's own account (through the taker's allowance) to a stranger. */
  | "extra-transfer-out-of-owner"
  /** Also approves a stranger as delegate over the taker's input account, for everything. */
  | "approve-spliced"
  /** Also hands ownership of the taker's input account to a stranger (a setup instruction). */
  | "set-authority-spliced"
  /** Pays the output to a stranger's token account instead of destinationTokenAccount. */
  | "foreign-destination"
  /** Adds an instruction of a program on no allow-list. */
  | "unknown-program"
  /** otherAmountThreshold a hundredth of outAmount, whatever slippageBps says. */
  | "low-minimum-out"
  /** An honest answer padded past 4 MB, streamed without a length. */
  | "huge-answer"
  /** Reads the request and never answers. */
  | "never-answers"
  /** Jupiter's "no route" answer (HTTP 400, COULD_NOT_FIND_ANY_ROUTE). */
  | "no-route"
  /**
   * A quote whose swap instruction is Jupiter v6's program (on the default allow-list), naming the
   * accounts a route would, which fails on chain as Jupiter does when the price moved past the
   * slippage: custom program error 6001 (SlippageToleranceExceeded). The server puts a tiny
   * program that does only that at Jupiter's address on the local chain on first use.
   */
  | "slippage-6001"
  /** 40 extra accounts on the payout, in no lookup table (over 1232 bytes), unless maxAccounts is at most 24. */
  | "oversize-transaction";

export interface SwapPool {
  readonly mintA: string;
  readonly mintB: string;
  readonly reserveA: bigint;
  readonly reserveB: bigint;
}

export interface JupiterSwapServerOptions {
  /** The embedded local chain's RPC URL, with cheatcodes on. */
  readonly rpcUrl: string;
  readonly pools: readonly SwapPool[];
  /** The pools' fee, in basis points of the input (default 30). */
  readonly feeBps?: number;
  /**
   * Put the pools' vaults and mints in one real address lookup table on the chain and name it in
   * every answer's addressesByLookupTableAddress, as Jupiter does, so a v0 transaction can load
   * them through it. Default false: the answers name no table.
   */
  readonly lookupTable?: boolean;
  /**
   * Of several pools for one pair, give each destination (an agent's output account: its runs'
   * takers are new each run) its own, assigned at its first request (the first pool once all are
   * taken). A pool's output vault has one delegate at a time, so takers swapping at once on one
   * pool would undo each other's; the swap bench runs 1,000 at once. Default false: the first
   * pool of the pair.
   */
  readonly poolPerTaker?: boolean;
  /** Rewrites each /build answer of a route before it is sent (see hostile-swap-routes.ts). */
  readonly mutate?: AnswerMutator;
}

export interface JupiterSwapServer {
  /** Base URL: `${url}/build` answers like Jupiter's /swap/v2/build. */
  readonly url: string;
  /** Each pool's address and vaults, for checks on chain. */
  readonly pools: readonly LivePool[];
  /** The address the hostile modes pay or hand authority to. */
  readonly stranger: string;
  /** The lookup table's address and what it holds, when `lookupTable` was asked for. */
  readonly lookupTable: { readonly address: string; readonly addresses: readonly string[] } | undefined;
  setMode(mode: JupiterSwapServerMode): void;
  /** What was asked, in order. */
  requests(): readonly URLSearchParams[];
  close(): Promise<void>;
}

export interface LivePool {
  /** The vaults' owner, which stands for the pool (routePlan's ammKey). */
  readonly address: string;
  readonly mintA: string;
  readonly mintB: string;
  readonly vaultA: string;
  readonly vaultB: string;
}

const TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFwC1ZHHvJ6TEvVePc7" as Address;
const LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111";
/** An address lookup table's header (LookupTableMeta), before its addresses. */
const LOOKUP_TABLE_META_SIZE = 56;
/** The compute unit price honest answers ask for, in micro-lamports (the local routes'). */
export const SERVER_COMPUTE_UNIT_PRICE = LOCAL_ROUTE_COMPUTE_UNIT_PRICE;
const HUGE_BYTES = 4 * 1024 * 1024;
/**
 * The program slippage-6001 answers call in the swap slot: it fails with Jupiter's error 6001.
 * Not at Jupiter's address (a cheatcode would have to write a program there, and the local chain's
 * refuse to), but deployed through the loader at a key of a fixed seed, so a service can list it
 * in SWAP_ALLOWED_PROGRAMS before the chain starts.
 */
const SLIPPAGE_PROGRAM_KEY = localKeyFromSeed(
  new Uint8Array(createHash("sha256").update("jupiter-swap-server: slippage program").digest()),
);
export const SLIPPAGE_PROGRAM: string = SLIPPAGE_PROGRAM_KEY.address;
/** Jupiter's SlippageToleranceExceeded. */
export const JUPITER_SLIPPAGE_ERROR = 6001;
/** Anchor's discriminator of Jupiter v6's `route`, for a realistic first 8 bytes. */
const ROUTE_DISCRIMINATOR = [0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a];
/** Enough to pass 1232 bytes while staying under a v0 message's 64 accounts (kit refuses more). */
const OVERSIZE_ACCOUNTS = 40;
const OVERSIZE_MAX_ACCOUNTS = 24;

export async function startJupiterSwapServer(options: JupiterSwapServerOptions): Promise<JupiterSwapServer> {
  const rpc = createSolanaRpc(options.rpcUrl);
  const feeBps = BigInt(options.feeBps ?? 30);
  const cheat = cheatcodes(options.rpcUrl);
  const stranger = randomAddress();
  const mints = new Map<string, { program: Address; decimals: number }>();

  const mintOf = async (mint: string) => {
    const known = mints.get(mint);
    if (known !== undefined) return known;
    const { value } = await rpc.getAccountInfo(mint as Address, { encoding: "base64" }).send();
    if (value === null) return undefined;
    const decoded = getMintDecoder().decode(Buffer.from(value.data[0], "base64"));
    const info = { program: value.owner, decimals: decoded.decimals };
    mints.set(mint, info);
    return info;
  };
  // The service's own derivation (held to kit's in program-address.test.ts): kit's goes through
  // WebCrypto a bump at a time, and in the swap bench this server shares the machine with the service.
  const ata = async (owner: string, mint: string): Promise<string> => {
    const info = await mintOf(mint);
    return associatedTokenAddress(owner, mint, info?.program ?? TOKEN_2022);
  };
  const tokenAccountOf = (value: { data: readonly string[] } | null) => {
    if (value === null) return undefined;
    const data = Buffer.from(value.data[0] as string, "base64");
    return { owner: getAddressDecoder().decode(data.subarray(32, 64)), amount: data.readBigUInt64LE(64) };
  };
  const tokenAccount = async (account: string) =>
    tokenAccountOf((await rpc.getAccountInfo(account as Address, { encoding: "base64" }).send()).value);

  const pools: LivePool[] = [];
  for (const pool of options.pools) {
    const address = randomAddress();
    for (const [mint, reserve] of [
      [pool.mintA, pool.reserveA],
      [pool.mintB, pool.reserveB],
    ] as const) {
      const info = await mintOf(mint);
      if (info === undefined) throw new Error(`the pool's mint ${mint} is not on the chain`);
      await cheat("surfnet_setTokenAccount", [address, mint, { amount: safe(reserve) }, info.program]);
    }
    pools.push({
      address,
      mintA: pool.mintA,
      mintB: pool.mintB,
      vaultA: await ata(address, pool.mintA),
      vaultB: await ata(address, pool.mintB),
    });
  }

  const lookupTable =
    options.lookupTable === true ? await createLookupTable(options.rpcUrl, pools, cheat) : undefined;
  const tables = lookupTable === undefined ? null : { [lookupTable.address]: lookupTable.addresses };

  // The honest answer is the product's local route source (src/local-chain/pools/local-swap-routes.ts)
  // over these pools; the server authorizes the payout with a cheatcode instead of a pool key.
  const destinations = new Map<string, RoutePool>();
  const routes = createLocalSwapRoutes({
    pools,
    feeBps: Number(feeBps),
    label: "Local CPMM",
    lookupTables: tables,
    // Both vaults in one read, as a route source would read them.
    readVaults: async (vaults) =>
      (await rpc.getMultipleAccounts(vaults as Address[], { encoding: "base64" }).send()).value.map(
        (value) => tokenAccountOf(value)?.amount,
      ),
    mintOf,
    associatedAccount: (owner, mint) => ata(owner, mint),
    async authorize(pool, _outputVault, outputMint, taker, amount) {
      const outMint = (await mintOf(outputMint)) as { program: Address };
      await cheat("surfnet_setTokenAccount", [
        pool.address,
        outputMint,
        { delegate: taker, delegatedAmount: safe(amount) },
        outMint.program,
      ]);
    },
    // Of several pools for one pair, each destination its own (the first once all are taken).
    ...(options.poolPerTaker === true
      ? {
          choosePool(candidates: readonly RoutePool[], _taker: string, destination: string) {
            const known = destinations.get(destination);
            if (known !== undefined) return known;
            const taken = new Set(destinations.values());
            const pool = candidates.find((p) => !taken.has(p)) ?? (candidates[0] as RoutePool);
            destinations.set(destination, pool);
            return pool;
          },
        }
      : {}),
  });

  let slippageProgram: Promise<void> | undefined;
  const installSlippageProgram = (): Promise<void> => {
    slippageProgram ??= (async () => {
      await deployProgram(options.rpcUrl, failingProgram(JUPITER_SLIPPAGE_ERROR), SLIPPAGE_PROGRAM_KEY);
    })();
    return slippageProgram;
  };

  let mode: JupiterSwapServerMode = "honest";
  const asked: URLSearchParams[] = [];

  /** The honest answer, then the one change the mode makes, as a compromised aggregator might. */
  const build = async (query: URLSearchParams): Promise<{ status: number; body: unknown }> => {
    if (mode === "no-route") {
      for (const field of ["inputMint", "outputMint", "taker", "payer", "destinationTokenAccount"]) {
        if (!isAddress(query.get(field) ?? "")) return routes.build(query);
      }
      return noRoute();
    }
    const answer = await routes.build(query);
    if (answer.status !== 200) return answer;
    const body = answer.body as ReturnType<typeof routeAnswer>;
    const inputMint = query.get("inputMint") as string;
    const outputMint = query.get("outputMint") as string;
    const taker = query.get("taker") as string;
    const destination = query.get("destinationTokenAccount") as string;
    const amount = BigInt(query.get("amount") as string);
    const slippageBps = body.slippageBps;
    const outAmount = BigInt(body.outAmount);
    const inMint = (await mintOf(inputMint)) as { program: Address; decimals: number };
    const outMint = (await mintOf(outputMint)) as { program: Address; decimals: number };
    const pay = body.swapInstruction;
    const payout = body.cleanupInstruction as WireInstruction;
    const [takerSource, , inputVault] = pay.accounts.map((a) => a.pubkey) as [string, string, string];
    const outputVault = payout.accounts[0]?.pubkey as string;

    if (mode === "foreign-destination") {
      await cheat("surfnet_setTokenAccount", [stranger, outputMint, { amount: 0 }, outMint.program]);
      (payout.accounts[2] as { pubkey: string }).pubkey = await ata(stranger, outputMint);
    }
    const maxAccounts = query.has("maxAccounts") ? Number(query.get("maxAccounts")) : 64;
    if (mode === "oversize-transaction" && !(maxAccounts <= OVERSIZE_MAX_ACCOUNTS)) {
      // SPL Token ignores accounts past the ones it reads when the authority is no multisig, so
      // these only make the transaction too large; they are in no lookup table.
      for (let i = 0; i < OVERSIZE_ACCOUNTS; i++) {
        payout.accounts.push({ pubkey: randomAddress(), isSigner: false, isWritable: false });
      }
    }
    if (mode === "slippage-6001") {
      await installSlippageProgram();
      const data = Buffer.alloc(8 + 8 + 8 + 2);
      Buffer.from(ROUTE_DISCRIMINATOR).copy(data, 0);
      data.writeBigUInt64LE(amount, 8);
      data.writeBigUInt64LE(outAmount, 16);
      data.writeUInt16LE(slippageBps, 24);
      body.swapInstruction = wire(
        SLIPPAGE_PROGRAM,
        [
          meta(inMint.program, false, false),
          meta(taker, true, false),
          meta(takerSource, false, true),
          meta(inputVault, false, true),
          meta(outputVault, false, true),
          meta(destination, false, true),
        ],
        data,
      );
      body.cleanupInstruction = null;
    }
    if (mode === "extra-transfer-out-of-owner") {
      // The owner is whoever owns the destination; their input account is the one the taker holds
      // an allowance over, which this spends to a stranger's account.
      const owner = (await tokenAccount(destination))?.owner ?? taker;
      const ownerInput = await ata(owner, inputMint);
      await cheat("surfnet_setTokenAccount", [stranger, inputMint, { amount: 0 }, inMint.program]);
      body.otherInstructions.push(
        transferCheckedWire(
          inMint.program,
          ownerInput,
          inputMint,
          await ata(stranger, inputMint),
          taker,
          amount,
          inMint.decimals,
        ),
      );
    }
    if (mode === "approve-spliced") {
      body.setupInstructions.push(
        wire(
          inMint.program,
          [meta(takerSource, false, true), meta(stranger, false, false), meta(taker, true, false)],
          getApproveInstructionDataEncoder().encode({ amount: 2n ** 64n - 1n }),
        ),
      );
    }
    if (mode === "set-authority-spliced") {
      body.setupInstructions.push(
        wire(
          inMint.program,
          [meta(takerSource, false, true), meta(taker, true, false)],
          getSetAuthorityInstructionDataEncoder().encode({
            authorityType: AuthorityType.AccountOwner,
            newAuthority: some(stranger as Address),
          }),
        ),
      );
    }
    if (mode === "unknown-program") {
      body.setupInstructions.push(wire(randomAddress(), [meta(taker, true, false)], new Uint8Array([1])));
    }
    if (mode === "low-minimum-out") body.otherAmountThreshold = (outAmount / 100n).toString();
    return { status: 200, body };
  };

  /** The answer, through `mutate` when there is a route to rewrite. */
  const answer = async (query: URLSearchParams) => {
    const built = await build(query);
    if (built.status !== 200 || options.mutate === undefined) return built;
    const context = { query, stranger, rpcUrl: options.rpcUrl };
    return { ...built, body: await options.mutate(built.body as BuildAnswer, context) };
  };

  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method !== "GET" || url.pathname !== "/swap/v2/build") {
      res.writeHead(404, { "content-type": "application/json" }).end('{"error":"Not found"}');
      return;
    }
    asked.push(url.searchParams);
    const current = mode;
    if (current === "never-answers") return;
    answer(url.searchParams).then(
      ({ status, body }) => {
        if (current === "huge-answer" && status === 200) {
          streamHuge(res, body);
          return;
        }
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      },
      (error: unknown) => {
        res
          .writeHead(500, { "content-type": "application/json" })
          .end(JSON.stringify({ error: `the test server failed: ${String(error)}` }));
      },
    );
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/swap/v2`,
    pools,
    stranger,
    lookupTable,
    setMode(next) {
      mode = next;
    },
    requests: () => asked,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * One address lookup table holding every pool's vaults and mints, written with the
 * surfnet_setAccount cheatcode in the ALT program's layout: LookupTableMeta (the account type 1 as
 * a u32, deactivation slot u64::MAX for an active table, last extended slot 0 so every address is
 * usable from the next slot on, its start index, an authority option, two bytes of padding), then
 * the addresses.
 */
async function createLookupTable(
  rpcUrl: string,
  pools: readonly LivePool[],
  cheat: ReturnType<typeof cheatcodes>,
): Promise<{ address: string; addresses: readonly string[] }> {
  const address = randomAddress();
  const addresses = [...new Set(pools.flatMap((p) => [p.vaultA, p.vaultB, p.mintA, p.mintB]))];
  const data = Buffer.alloc(LOOKUP_TABLE_META_SIZE + 32 * addresses.length);
  data.writeUInt32LE(1, 0);
  data.writeBigUInt64LE(2n ** 64n - 1n, 4);
  data.writeBigUInt64LE(0n, 12);
  data[20] = 0;
  data[21] = 1;
  Buffer.from(getAddressEncoder().encode(randomAddress())).copy(data, 22);
  for (const [i, entry] of addresses.entries()) {
    Buffer.from(getAddressEncoder().encode(entry as Address)).copy(data, LOOKUP_TABLE_META_SIZE + 32 * i);
  }
  const rpc = createSolanaRpc(rpcUrl);
  const lamports = await rpc.getMinimumBalanceForRentExemption(BigInt(data.length)).send();
  await cheat("surfnet_setAccount", [
    address,
    { lamports: Number(lamports), data: data.toString("hex"), owner: LOOKUP_TABLE_PROGRAM },
  ]);
  return { address, addresses };
}

/**
 * The smallest sBPF program (an ELF the lenient loader takes: header, `.text`, `.shstrtab`) whose
 * entrypoint returns `code`, which the runtime reports as custom program error `code`:
 * `mov64 r0, code; exit`.
 */
function failingProgram(code: number): Uint8Array {
  const text = Buffer.alloc(16);
  text.set([0xb7, 0, 0, 0], 0);
  text.writeUInt32LE(code, 4);
  text.set([0x95, 0, 0, 0, 0, 0, 0, 0], 8);
  const names = Buffer.from("\0.text\0.shstrtab\0", "latin1");
  const TEXT = 0x40;
  const NAMES = 0x50;
  const SECTIONS = 0x68;
  const elf = Buffer.alloc(SECTIONS + 3 * 64);
  elf.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0], 0); // magic, 64-bit, little-endian, version 1, no ABI
  elf.writeUInt16LE(3, 16); // ET_DYN
  elf.writeUInt16LE(247, 18); // EM_BPF
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(BigInt(TEXT), 24); // entry: the first instruction
  elf.writeBigUInt64LE(BigInt(SECTIONS), 40);
  elf.writeUInt16LE(64, 52); // header size
  elf.writeUInt16LE(56, 54); // program header entry size (none follow)
  elf.writeUInt16LE(64, 58); // section header entry size
  elf.writeUInt16LE(3, 60); // sections: null, .text, .shstrtab
  elf.writeUInt16LE(2, 62); // the names are in section 2
  text.copy(elf, TEXT);
  names.copy(elf, NAMES);
  const section = (
    index: number,
    name: number,
    type: number,
    flags: number,
    offset: number,
    size: number,
  ) => {
    const at = SECTIONS + index * 64;
    elf.writeUInt32LE(name, at);
    elf.writeUInt32LE(type, at + 4);
    elf.writeBigUInt64LE(BigInt(flags), at + 8);
    elf.writeBigUInt64LE(BigInt(flags === 0 ? 0 : offset), at + 16); // loaded sections sit at their offset
    elf.writeBigUInt64LE(BigInt(offset), at + 24);
    elf.writeBigUInt64LE(BigInt(size), at + 32);
    elf.writeBigUInt64LE(1n, at + 48);
  };
  section(1, 1, 1, 6, TEXT, text.length); // .text: PROGBITS, ALLOC | EXECINSTR
  section(2, 7, 3, 0, NAMES, names.length); // .shstrtab: STRTAB
  return elf;
}

/** The answer with a padding field, streamed past 4 MB in chunks without a Content-Length. */
function streamHuge(res: http.ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json" });
  const head = JSON.stringify(body).slice(0, -1);
  res.write(`${head},"padding":"`);
  const chunk = "x".repeat(64 * 1024);
  let sent = 0;
  const pump = (): void => {
    while (sent < HUGE_BYTES && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once("drain", pump);
        return;
      }
    }
    if (!res.destroyed) res.end('"}');
  };
  pump();
}

/** The cheatcodes read amounts as JSON numbers: the pools keep to amounts a double holds exactly. */
function safe(amount: bigint): number {
  if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError("pool amounts must stay below 2^53");
  return Number(amount);
}

function randomAddress(): Address {
  return getAddressDecoder().decode(randomBytes(32));
}

/** surfpool's cheatcodes over raw JSON-RPC (kit has no typed methods for them). */
function cheatcodes(rpcUrl: string) {
  let id = 0;
  return async (method: string, params: unknown[]): Promise<void> => {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    const answer = (await response.json()) as { error?: unknown };
    if (answer.error !== undefined) throw new Error(`${method}: ${JSON.stringify(answer.error)}`);
  };
}
