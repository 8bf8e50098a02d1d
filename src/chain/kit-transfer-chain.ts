import {
  type Base64EncodedBytes,
  type Base64EncodedWireTransaction,
  getBase64Encoder,
  type RpcTransport,
  type Signature,
} from "@solana/kit";
import type { SolanaCommitment } from "../config.ts";
import { UnavailableError } from "../domain/errors.ts";
import { checkedAddress } from "./base58-address.ts";
import {
  PreflightFailure,
  type RawAccountState,
  type Simulated,
  type TokenAccountState,
  type TransferChain,
} from "./chain.ts";
import { createChainRpc } from "./chain-rpc.ts";
import { guardChainRead } from "./kit-chain.ts";
import { TOKEN_PROGRAMS, tokenFieldsOf } from "./swap-route.ts";

/** The JSON-RPC error of a transaction its preflight simulation refused (Agave's -32002). */
const PREFLIGHT_FAILURE = -32002;

function rawAccountOf(lamports: number | bigint, program: string, data64: string): RawAccountState {
  return {
    lamports: BigInt(lamports),
    program,
    data: getBase64Encoder().encode(data64 as Base64EncodedBytes) as Uint8Array,
  };
}

/**
 * A token account from its owner program and data (base64); undefined when it is not one. Read
 * by the same decoder as the swap's end state (tokenFieldsOf): Token-2022's accounts share SPL
 * Token's first 165 bytes, which hold everything read here.
 */
function tokenAccountOf(at: string, owner: string, data64: string): TokenAccountState | undefined {
  if (!TOKEN_PROGRAMS.has(owner)) return undefined;
  const token = tokenFieldsOf({
    lamports: 0n,
    program: owner,
    data: getBase64Encoder().encode(data64 as Base64EncodedBytes) as Uint8Array,
  });
  if (token === undefined) return undefined;
  return {
    address: at,
    mint: token.mint,
    owner: token.owner,
    amount: token.amount,
    delegate: token.delegate,
    delegatedAmount: token.delegatedAmount,
    frozen: token.state === 2,
  };
}

/**
 * The transfer side of the chain port on @solana/kit: token account state, blockhashes, block
 * height, statuses (history searched, so a transaction that landed long ago is still found),
 * simulation and sending. Same transports and failure rules as the read side.
 */
/** Accounts one getMultipleAccounts may name (Agave's MAX_MULTIPLE_ACCOUNTS). */
const MULTIPLE_ACCOUNTS_LIMIT = 100;

export function createKitTransferChain(options: {
  transport: RpcTransport;
  commitment: SolanaCommitment;
}): TransferChain {
  const rpc = createChainRpc(options.transport);
  const commitment = options.commitment === "processed" ? "confirmed" : options.commitment;
  const abort = (signal: AbortSignal | undefined) => (signal === undefined ? {} : { abortSignal: signal });
  let sent = 0;
  /** One getMultipleAccounts (at most MULTIPLE_ACCOUNTS_LIMIT addresses), base64, as the cluster answers. */
  const readMultiple = async (addresses: readonly string[], signal: AbortSignal | undefined) =>
    addresses.length === 0
      ? []
      : (
          await rpc
            .getMultipleAccounts(addresses.map(checkedAddress), { encoding: "base64", commitment })
            .send(abort(signal))
        ).value;

  return {
    getTokenAccount: (at, signal) =>
      guardChainRead(signal, async () => {
        const { value } = await rpc
          .getAccountInfo(checkedAddress(at), { encoding: "base64", commitment })
          .send(abort(signal));
        return value === null ? undefined : tokenAccountOf(at, value.owner, value.data[0]);
      }),
    getAccounts: (addresses, signal) =>
      guardChainRead(signal, async () =>
        (await readMultiple(addresses, signal)).map((account) =>
          account === null ? undefined : rawAccountOf(account.lamports, account.owner, account.data[0]),
        ),
      ),
    getTokenAccounts: (addresses, signal) =>
      guardChainRead(signal, async () => {
        const out: (TokenAccountState | undefined)[] = [];
        for (let i = 0; i < addresses.length; i += MULTIPLE_ACCOUNTS_LIMIT) {
          const chunk = addresses.slice(i, i + MULTIPLE_ACCOUNTS_LIMIT);
          const value = await readMultiple(chunk, signal);
          chunk.forEach((at, j) => {
            const account = value[j];
            out.push(
              account === null || account === undefined
                ? undefined
                : tokenAccountOf(at, account.owner, account.data[0]),
            );
          });
        }
        return out;
      }),
    getLatestBlockhash: (signal) =>
      guardChainRead(signal, async () => {
        const { value } = await rpc.getLatestBlockhash({ commitment }).send(abort(signal));
        return { blockhash: value.blockhash, lastValidBlockHeight: BigInt(value.lastValidBlockHeight) };
      }),
    getBlockHeight: (signal) =>
      guardChainRead(signal, async () =>
        BigInt(await rpc.getBlockHeight({ commitment }).send(abort(signal))),
      ),
    getSignatureStatuses: (signatures, signal, statusOptions) =>
      guardChainRead(signal, async () => {
        const { value } = await rpc
          .getSignatureStatuses(signatures as Signature[], {
            searchTransactionHistory: statusOptions?.searchHistory === true,
          })
          .send(abort(signal));
        return value.map((status) =>
          status === null || status.confirmationStatus === "processed"
            ? undefined
            : { slot: BigInt(status.slot), err: status.err },
        );
      }),
    simulateTransaction: (transaction, signal, simulateOptions) =>
      guardChainRead(signal, async () => {
        const addresses = simulateOptions?.accounts ?? [];
        const { value } = await rpc
          .simulateTransaction(transaction as Base64EncodedWireTransaction, {
            encoding: "base64",
            commitment,
            ...(simulateOptions?.replaceRecentBlockhash === true ? { replaceRecentBlockhash: true } : {}),
            ...(addresses.length === 0
              ? {}
              : { accounts: { addresses: addresses.map(checkedAddress), encoding: "base64" } }),
          })
          .send(abort(signal));
        const after = (
          value as {
            accounts?:
              | readonly ({
                  lamports: number | bigint;
                  owner: string;
                  data: readonly string[];
                } | null)[]
              | null;
          }
        ).accounts;
        return {
          err: value.err,
          logs: value.logs ?? [],
          unitsConsumed: value.unitsConsumed === undefined ? undefined : BigInt(value.unitsConsumed),
          accounts: addresses.map((at, i) => {
            const account = after?.[i];
            return account === null || account === undefined
              ? undefined
              : tokenAccountOf(at, account.owner, account.data[0] as string);
          }),
          raw: addresses.map((_, i) => {
            const account = after?.[i];
            return account === null || account === undefined
              ? undefined
              : rawAccountOf(account.lamports, account.owner, account.data[0] as string);
          }),
          ...replacementOf(value),
          ...feePayerLamportsOf(value),
        };
      }),
    async sendTransaction(transaction, signal, sendOptions) {
      if (sendOptions?.preflight !== true) {
        return guardChainRead(signal, async () => {
          await rpc
            .sendTransaction(transaction as Base64EncodedWireTransaction, {
              encoding: "base64",
              skipPreflight: true,
            })
            .send(abort(signal));
        });
      }
      // Straight through the transport: kit turns a preflight failure into an error whose
      // transaction error is no longer in the cluster's JSON form, which the executor reads.
      const response = await guardChainRead(signal, () =>
        options.transport<{ error?: { code?: number | bigint; data?: { err?: unknown } } }>({
          payload: {
            jsonrpc: "2.0",
            id: ++sent,
            method: "sendTransaction",
            params: [transaction, { encoding: "base64", preflightCommitment: commitment }],
          },
          ...(signal === undefined ? {} : { signal }),
        }),
      );
      const error = response.error;
      if (error === undefined) return;
      // Kit's transports read integers exactly, as bigints.
      if (
        Number(error.code) === PREFLIGHT_FAILURE &&
        error.data?.err !== undefined &&
        error.data.err !== null
      ) {
        throw new PreflightFailure(error.data.err);
      }
      throw new UnavailableError("the Solana RPC refused the transaction", { cause: error });
    },
  };
}

/** A simulation's replacement blockhash, when the cluster gave one (Agave 1.16 and later do). */
function replacementOf(value: unknown): Pick<Simulated, "replacementBlockhash"> {
  const replacement = (
    value as { replacementBlockhash?: { blockhash?: unknown; lastValidBlockHeight?: unknown } | null }
  ).replacementBlockhash;
  if (
    typeof replacement?.blockhash !== "string" ||
    (typeof replacement.lastValidBlockHeight !== "bigint" &&
      typeof replacement.lastValidBlockHeight !== "number")
  ) {
    return {};
  }
  return {
    replacementBlockhash: {
      blockhash: replacement.blockhash,
      lastValidBlockHeight: BigInt(replacement.lastValidBlockHeight),
    },
  };
}

/** The fee payer's balances around a simulation, when the cluster gave them (Agave 3 does). */
function feePayerLamportsOf(value: unknown): Pick<Simulated, "feePayerLamports"> {
  const { preBalances, postBalances } = value as { preBalances?: unknown; postBalances?: unknown };
  const first = (list: unknown) => {
    const at = Array.isArray(list) ? (list[0] as unknown) : undefined;
    return typeof at === "bigint" || (typeof at === "number" && Number.isSafeInteger(at))
      ? BigInt(at)
      : undefined;
  };
  const before = first(preBalances);
  const after = first(postBalances);
  return before === undefined || after === undefined ? {} : { feePayerLamports: { before, after } };
}
