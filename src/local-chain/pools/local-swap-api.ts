import { randomBytes } from "node:crypto";
import {
  type Address,
  address,
  appendTransactionMessageInstruction,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  pipe,
  type RpcTransport,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  type Transaction,
} from "@solana/kit";
import { findAssociatedTokenPda, getApproveCheckedInstruction } from "@solana-program/token";
import { createChainRpc } from "../../chain/chain-rpc.ts";
import {
  isNoRouteAnswer,
  NoRouteError,
  type SwapApi,
  SwapApiUnavailableError,
  swapBuildFromAnswer,
  swapBuildQuery,
} from "../../token/jupiter-swap-api.ts";
import type { LocalPool } from "./local-pools.ts";
import { createLocalSwapRoutes, type RouteMint, type SwapRouteSource } from "./local-swap-routes.ts";

/** How route failures name their source: never mistaken for Jupiter. */
export const LOCAL_ROUTES_NAME = "the embedded chain's local pools (a development chain, not Jupiter)";
/** How long an authorization of the pool's side may take to land before the build fails (retried). */
const AUTHORIZE_WAIT_MS = 5_000;
const AUTHORIZE_POLL_MS = 20;

/**
 * The swap executor's route port (SwapApi) served in-process by the embedded chain's local pools:
 * the same `/build` query and answer as Jupiter's HTTP adapter, read by the same checks
 * (jupiter-swap-api.ts), so a swap run on `npm start` takes the path it takes on mainnet. The pools'
 * side of each swap is authorized by a real transaction signed by the pool's key, one of the chain's
 * own keys (../state/chain-keys.ts, from its random seed); the service holds it only because the chain is
 * its own.
 */
export function createLocalSwapApi(options: {
  readonly transport: RpcTransport;
  readonly pools: readonly LocalPool[];
  readonly feeBps?: number;
}): SwapApi & { readonly routes: SwapRouteSource } {
  const routes = createEmbeddedSwapRoutes(options);
  return {
    routes,
    async build(request) {
      const query = new URLSearchParams(swapBuildQuery(request));
      let answer: Awaited<ReturnType<SwapRouteSource["build"]>>;
      try {
        answer = await routes.build(query);
      } catch (error) {
        throw new SwapApiUnavailableError(
          "unreachable",
          `${LOCAL_ROUTES_NAME} could not be read or authorized`,
          {
            cause: error,
          },
        );
      }
      if (answer.status === 200) return swapBuildFromAnswer(answer.body, request, LOCAL_ROUTES_NAME);
      if (isNoRouteAnswer(answer.body)) {
        throw new NoRouteError(
          "the local pools have no pool for this pair: they pair each catalog token with USDC and with SOL",
        );
      }
      throw new SwapApiUnavailableError("rejected", `${LOCAL_ROUTES_NAME} refused the request`);
    },
  };
}

/** The local pools as a `/build` route source on a chain reached through `transport`. */
export function createEmbeddedSwapRoutes(options: {
  readonly transport: RpcTransport;
  readonly pools: readonly LocalPool[];
  readonly feeBps?: number;
}): SwapRouteSource {
  const rpc = createChainRpc(options.transport);
  const keys = new Map(options.pools.map((p) => [p.key.address as string, p.key]));
  const mints = new Map<string, RouteMint>();
  return createLocalSwapRoutes({
    pools: options.pools.map((p) => ({
      address: p.key.address,
      mintA: p.mintA,
      mintB: p.mintB,
      vaultA: p.vaultA,
      vaultB: p.vaultB,
    })),
    ...(options.feeBps === undefined ? {} : { feeBps: options.feeBps }),
    async readVaults(vaults) {
      const { value } = await rpc
        .getMultipleAccounts(vaults as Address[], { encoding: "base64", commitment: "processed" })
        .send();
      return value.map((account) =>
        account === null ? undefined : Buffer.from(account.data[0], "base64").readBigUInt64LE(64),
      );
    },
    async mintOf(mint) {
      const known = mints.get(mint);
      if (known !== undefined) return known;
      const { value } = await rpc.getAccountInfo(address(mint), { encoding: "base64" }).send();
      if (value === null) return undefined;
      const data = Buffer.from(value.data[0], "base64");
      if (data.length < 45) return undefined;
      const found = { program: value.owner as string, decimals: data[44] as number };
      mints.set(mint, found);
      return found;
    },
    async associatedAccount(owner, mint, program) {
      const [found] = await findAssociatedTokenPda({
        owner: address(owner),
        mint: address(mint),
        tokenProgram: address(program),
      });
      return found;
    },
    async authorize(pool, outputVault, outputMint, taker, amount) {
      const key = keys.get(pool.address);
      const mint = mints.get(outputMint);
      if (key === undefined || mint === undefined) throw new Error("not a local pool");
      const { value: lifetime } = await rpc.getLatestBlockhash({ commitment: "processed" }).send();
      const message = pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayerSigner(createNoopSigner(key.address), m),
        (m) => setTransactionMessageLifetimeUsingBlockhash(lifetime, m),
        (m) =>
          appendTransactionMessageInstruction(
            getApproveCheckedInstruction(
              {
                source: address(outputVault),
                mint: address(outputMint),
                delegate: address(taker),
                owner: createNoopSigner(key.address),
                amount,
                decimals: mint.decimals,
              },
              { programAddress: address(mint.program) },
            ),
            m,
          ),
        // A nonce: a retry of the same run asks again for the same taker and amount, within the
        // same blockhash, and the very same transaction would be refused as already processed.
        (m) => appendTransactionMessageInstruction(authorizationNonce(), m),
      );
      const compiled = compileTransaction(message);
      const signed = {
        ...compiled,
        signatures: { [key.address]: key.sign(compiled.messageBytes as unknown as Uint8Array) },
      } as unknown as Transaction;
      const signature = await rpc
        .sendTransaction(getBase64EncodedWireTransaction(signed), {
          encoding: "base64",
          preflightCommitment: "processed",
        })
        .send();
      await landed(rpc, signature);
    },
  });
}

/** SPL Memo (v2) carrying random text, so no two authorizations are the same transaction. */
function authorizationNonce() {
  return {
    programAddress: address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"),
    data: new TextEncoder().encode(`local pool authorization ${randomBytes(8).toString("hex")}`),
  };
}

/** Waits until the authorization is on the chain; a failed or lost one fails the build. */
async function landed(rpc: ReturnType<typeof createChainRpc>, signature: Signature): Promise<void> {
  const deadline = Date.now() + AUTHORIZE_WAIT_MS;
  while (Date.now() < deadline) {
    const { value } = await rpc.getSignatureStatuses([signature]).send();
    const status = value[0];
    if (status !== null && status !== undefined) {
      if (status.err !== null) throw new Error("the pool's authorization failed on the chain");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, AUTHORIZE_POLL_MS));
  }
  throw new Error("the pool's authorization did not land in time");
}
