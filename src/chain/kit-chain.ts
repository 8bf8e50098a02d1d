import { type Address, address, getAddressEncoder, getProgramDerivedAddress } from "@solana/addresses";
import type { ReadonlyUint8Array } from "@solana/codecs-core";
import { getBase64Encoder } from "@solana/codecs-strings";
import { isSolanaError } from "@solana/errors";
import type { Signature } from "@solana/keys";
import type { RpcTransport } from "@solana/rpc-spec";
import type { Base64EncodedBytes } from "@solana/rpc-types";
import type { SolanaCommitment } from "../config.ts";
import { UnavailableError } from "../domain/errors.ts";
import type {
  Chain,
  ChainTransaction,
  MintAccount,
  OnChainMetadata,
  SignatureInfo,
  TokenBalance,
} from "./chain.ts";
import { createChainRpc } from "./chain-rpc.ts";
import { TOKEN_2022_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS } from "./token-programs.ts";

/** Metaplex Token Metadata: the program that owns most SPL tokens' name, symbol and uri. */
export const METAPLEX_PROGRAM_ADDRESS = address("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s");
/** Size of a classic SPL mint; a Token-2022 mint with extensions is longer, with its type at 165. */
const MINT_SIZE = 82;
const ACCOUNT_TYPE_OFFSET = 165;
const ACCOUNT_TYPE_MINT = 1;

/**
 * The chain port on @solana/kit's typed RPC client. The transport decides where the requests go:
 * HTTP to a cluster (wrapped in the resilient transport) or the embedded local chain in-process.
 * Accounts are decoded with the programs' own codecs (@solana-program/token and token-2022, the
 * Metaplex serializer); a JSON-RPC error or an answer that does not decode as documented becomes
 * UnavailableError, so callers never see a cluster's text.
 */
export function createKitChain(options: { transport: RpcTransport; commitment: SolanaCommitment }): Chain {
  const rpc = createChainRpc(options.transport);
  const commitment = options.commitment;
  // History methods do not serve "processed" (Agave refuses commitment below confirmed for them).
  const historyCommitment = commitment === "processed" ? "confirmed" : commitment;
  const base64 = getBase64Encoder();
  const addressBytes = getAddressEncoder();
  let metaplex: ReturnType<typeof loadMetaplexSerializer> | undefined;

  const accountData = async (at: Address, signal: AbortSignal | undefined) => {
    const { value } = await rpc
      .getAccountInfo(at, { encoding: "base64", commitment })
      .send(signal === undefined ? {} : { abortSignal: signal });
    if (value === null) return undefined;
    return { owner: value.owner, data: base64.encode(value.data[0] as Base64EncodedBytes) };
  };

  return {
    getMint: (mint, signal) =>
      guardChainRead(signal, async () => {
        const account = await accountData(address(mint), signal);
        if (account === undefined) return undefined;
        return await mintFromAccount(mint, account.owner, account.data);
      }),

    getMetaplexMetadata: (mint, signal) =>
      guardChainRead(signal, async () => {
        const [pda] = await getProgramDerivedAddress({
          programAddress: METAPLEX_PROGRAM_ADDRESS,
          seeds: [
            "metadata",
            addressBytes.encode(METAPLEX_PROGRAM_ADDRESS),
            addressBytes.encode(address(mint)),
          ],
        });
        const account = await accountData(pda, signal);
        if (account === undefined || account.owner !== METAPLEX_PROGRAM_ADDRESS) return undefined;
        try {
          metaplex ??= loadMetaplexSerializer();
          const [metadata] = (await metaplex).deserialize(account.data as Uint8Array);
          if (metadata.mint !== mint) return undefined;
          return {
            name: trimNul(metadata.name),
            symbol: trimNul(metadata.symbol),
            uri: trimNul(metadata.uri),
          };
        } catch {
          // An account at the PDA that is not metadata (another version of the layout, say).
          return undefined;
        }
      }),

    getSignaturesForAddress: (at, query, signal) =>
      guardChainRead(signal, async () => {
        const entries = await rpc
          .getSignaturesForAddress(address(at), {
            commitment: historyCommitment,
            limit: query.limit,
            ...(query.before === undefined ? {} : { before: query.before as Signature }),
            ...(query.until === undefined ? {} : { until: query.until as Signature }),
          })
          .send(signal === undefined ? {} : { abortSignal: signal });
        return entries.map(
          (entry): SignatureInfo => ({
            signature: entry.signature,
            slot: BigInt(entry.slot),
            blockTime: entry.blockTime === null ? null : Number(entry.blockTime),
            failed: entry.err !== null,
          }),
        );
      }),

    getTransaction: (signature, signal) =>
      guardChainRead(signal, async () => {
        const tx = await rpc
          .getTransaction(signature as Signature, {
            commitment: historyCommitment,
            encoding: "json",
            maxSupportedTransactionVersion: 0,
          })
          .send(signal === undefined ? {} : { abortSignal: signal });
        if (tx === null) return undefined;
        const meta = tx.meta;
        if (meta === null) throw new TypeError("a transaction without meta");
        const loaded = meta.loadedAddresses;
        const balances = (list: typeof meta.preTokenBalances): TokenBalance[] =>
          (list ?? []).map((b) => ({
            accountIndex: Number(b.accountIndex),
            mint: b.mint,
            owner: b.owner ?? undefined,
            amount: BigInt(b.uiTokenAmount.amount),
            decimals: Number(b.uiTokenAmount.decimals),
          }));
        return {
          signature,
          slot: BigInt(tx.slot),
          blockTime: tx.blockTime === null ? null : Number(tx.blockTime),
          failed: meta.err !== null,
          fee: BigInt(meta.fee),
          accountKeys: [
            ...tx.transaction.message.accountKeys,
            ...(loaded?.writable ?? []),
            ...(loaded?.readonly ?? []),
          ],
          preTokenBalances: balances(meta.preTokenBalances),
          postTokenBalances: balances(meta.postTokenBalances),
        } satisfies ChainTransaction;
      }),

    getBalance: (at, signal) =>
      guardChainRead(signal, async () => {
        const { value } = await rpc
          .getBalance(address(at), { commitment })
          .send(signal === undefined ? {} : { abortSignal: signal });
        return BigInt(value);
      }),

    async isHealthy(signal) {
      try {
        const health = await rpc.getHealth().send(signal === undefined ? {} : { abortSignal: signal });
        return health === "ok";
      } catch {
        return false;
      }
    },
  };
}

/**
 * The token programs' codecs, loaded on the first mint read: @solana-program/token imports all of
 * @solana/kit (17 MB in a process) and token-2022 is half a megabyte of code more, which a process
 * that has not read a mint yet need not carry (this adapter otherwise uses kit's packages one by one).
 */
const loadToken = () => import("@solana-program/token");
const loadToken2022 = () => import("@solana-program/token-2022");

/** A mint from its account, or undefined when the account is not one. */
export async function mintFromAccount(
  at: string,
  owner: string,
  data: ReadonlyUint8Array,
): Promise<MintAccount | undefined> {
  try {
    if (owner === TOKEN_PROGRAM_ADDRESS) {
      if (data.length !== MINT_SIZE) return undefined;
      const mint = (await loadToken()).getMintDecoder().decode(data);
      if (!mint.isInitialized) return undefined;
      return {
        address: at,
        program: "spl-token",
        decimals: mint.decimals,
        supply: mint.supply,
        metadata: undefined,
        extensions: [],
      };
    }
    if (owner === TOKEN_2022_PROGRAM_ADDRESS) {
      const isMint =
        data.length === MINT_SIZE ||
        (data.length > ACCOUNT_TYPE_OFFSET && data[ACCOUNT_TYPE_OFFSET] === ACCOUNT_TYPE_MINT);
      if (!isMint) return undefined;
      const mint = (await loadToken2022()).getMintDecoder().decode(data);
      if (!mint.isInitialized) return undefined;
      const extensions = mint.extensions.__option === "Some" ? mint.extensions.value : [];
      const found = extensions.find((e) => e.__kind === "TokenMetadata");
      const metadata: OnChainMetadata | undefined =
        found?.__kind === "TokenMetadata"
          ? { name: found.name, symbol: found.symbol, uri: found.uri }
          : undefined;
      return {
        address: at,
        program: "spl-token-2022",
        decimals: mint.decimals,
        supply: mint.supply,
        metadata,
        extensions: extensions.map((e) => e.__kind),
      };
    }
  } catch {
    // Owned by a token program but not decodable as a mint.
  }
  return undefined;
}

/**
 * The Metaplex serializer, loaded on first use: it brings Metaplex's umi serializers (some 15 MB),
 * which a process that never reads Metaplex metadata need not carry. Only the account module is
 * imported, not the package's index, which would load all of Metaplex's clients.
 */
async function loadMetaplexSerializer() {
  const { getMetadataAccountDataSerializer } = await import(
    "@metaplex-foundation/mpl-token-metadata/dist/src/generated/accounts/metadata.js"
  );
  return getMetadataAccountDataSerializer();
}

/** Older Metaplex accounts pad name, symbol and uri with NUL bytes to a fixed length. */
function trimNul(text: string): string {
  return text.replace(/\0+$/, "");
}

/**
 * Runs a chain read; its caller's abort passes through, UnavailableError from the transport
 * passes through, and anything else (a JSON-RPC error, an answer shaped otherwise than documented)
 * becomes UnavailableError with the original as its cause.
 */
export async function guardChainRead<T>(signal: AbortSignal | undefined, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (signal?.aborted === true) throw signal.reason;
    if (error instanceof UnavailableError) throw error;
    const message = isSolanaError(error)
      ? "the Solana RPC answered with an error"
      : "the Solana RPC answered something this service cannot read";
    throw new UnavailableError(message, { cause: error });
  }
}
