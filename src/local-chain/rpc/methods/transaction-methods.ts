import { getBase58Encoder } from "@solana/kit";
import { createRateLimiter } from "../../../auth/rate-limiter.ts";
import type { RateLimitConfig } from "../../../config.ts";
import { accountJson, encodingOf } from "../../encoding/account-encoding.ts";
import {
  encodedMeta,
  encodedTransaction,
  parsedInnerInstructions,
  transactionEncodingOf,
} from "../../encoding/encoded-transaction.ts";
import type { Commitment } from "../../runtime/block-clock.ts";
import type { LocalChain, Simulation } from "../../runtime/local-chain.ts";
import {
  accountCountOf,
  MAX_TRANSACTION_BYTES,
  TransactionSanitizeError,
  WireTransactionError,
} from "../../runtime/wire-transaction.ts";
import {
  invalidParams,
  JsonRpcError,
  paramError,
  SEND_TRANSACTION_PREFLIGHT_FAILURE,
  UNSUPPORTED_TRANSACTION_VERSION,
} from "../json-rpc-error.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  booleanOf,
  commitmentOf,
  configParam,
  contextSlotOf,
  invalidType,
  listParam,
  pubkeyParam,
  requireParams,
  signatureParam,
  stringParam,
  u64Param,
  withContext,
} from "../rpc-params.ts";

const MAX_SIGNATURE_STATUSES = 256;
/** Slots a validator's status cache covers (getSignatureStatuses without a history search). */
const STATUS_CACHE_SLOTS = 300;
const MAX_SIGNATURES_LIMIT = 1000;
/** Base58 and base64 text of a largest transaction (Agave's MAX_BASE58_SIZE and MAX_BASE64_SIZE). */
const MAX_BASE58_SIZE = 1683;
const MAX_BASE64_SIZE = 1644;
/** The most one airdrop gives: enough for any test, and the faucet never runs dry by accident. */
const MAX_AIRDROP_LAMPORTS = 10_000n * 1_000_000_000n;

/** Sending, simulating and reading transactions, their statuses and history, fees and airdrops. */
export function transactionMethods(
  chain: LocalChain,
  options: {
    /** requestAirdrop per client address (a token bucket each). */
    readonly airdropLimit: RateLimitConfig;
  },
): Record<string, RpcMethod> {
  const contextSlot = (config: Record<string, unknown>, commitment?: Commitment) =>
    contextSlotOf(chain, config, commitment);
  const airdropPolicy = { name: "airdrop", ...options.airdropLimit };
  // Bounded: clients inventing addresses cannot grow it (see rate-limiter.ts).
  const airdrops = createRateLimiter({ maxBuckets: 10_000 });

  return {
    sendTransaction(params) {
      requireParams(params, 1);
      const config = configParam(params, 1);
      const bytes = transactionBytes(params[0], config);
      contextSlot(config, commitmentOf({ commitment: config.preflightCommitment }));
      const outcome = run(() =>
        chain.send(bytes, { skipPreflight: booleanOf(config, "skipPreflight", false) }),
      );
      if (outcome.kind === "preflight-failed") {
        // Agave 3.x: a bad signature fails preflight like any other error (no -32003 any more),
        // and the data leaves out the accounts and balances a simulation would show.
        const { simulation } = outcome;
        throw new JsonRpcError(
          SEND_TRANSACTION_PREFLIGHT_FAILURE,
          `Transaction simulation failed: ${simulation.err?.message ?? ""}`,
          {
            ...simulationJson(simulation, undefined, false),
            accounts: null,
            innerInstructions: null,
            loadedAddresses: null,
            preBalances: null,
            postBalances: null,
            preTokenBalances: null,
            postTokenBalances: null,
          },
        );
      }
      return outcome.signature;
    },

    simulateTransaction(params, answer) {
      requireParams(params, 1);
      const config = configParam(params, 1);
      const bytes = transactionBytes(params[0], config);
      const sigVerify = booleanOf(config, "sigVerify", false);
      const replaceRecentBlockhash = booleanOf(config, "replaceRecentBlockhash", false);
      if (sigVerify && replaceRecentBlockhash) {
        throw paramError("sigVerify may not be used with replaceRecentBlockhash");
      }
      const accountsConfig = config.accounts as Record<string, unknown> | undefined | null;
      let addresses: string[] = [];
      let accountEncoding = encodingOf({}, "base64");
      if (accountsConfig !== undefined && accountsConfig !== null) {
        if (typeof accountsConfig !== "object" || !Array.isArray(accountsConfig.addresses)) {
          throw invalidType(accountsConfig, "struct RpcSimulateTransactionAccountsConfig");
        }
        // Counted before any is read, as Agave does.
        const named = accountCountOf(bytes);
        if (accountsConfig.addresses.length > named) {
          throw paramError(`Too many accounts provided; max ${named}`);
        }
        addresses = accountsConfig.addresses.map((item: unknown, i: number) =>
          pubkeyParam(item, `accounts.addresses[${i}]`),
        );
        accountEncoding = encodingOf(accountsConfig, "base64");
        if (accountEncoding === "binary" || accountEncoding === "base58") {
          throw paramError("base58 encoding not supported");
        }
      }
      const slot = contextSlot(config, commitmentOf(config));
      const withInner = booleanOf(config, "innerInstructions", false);
      const result = run(() =>
        chain.simulate(bytes, {
          sigVerify,
          replaceRecentBlockhash,
          accounts: addresses,
          innerInstructions: withInner,
        }),
      );
      const value = simulationJson(result.simulation, result.replacement, withInner);
      return withContext(slot, {
        ...value,
        accounts:
          accountsConfig === undefined || accountsConfig === null || result.simulation.err !== null
            ? accountsConfig === undefined || accountsConfig === null
              ? null
              : addresses.map(() => null)
            : result.simulation.accounts.map((account) =>
                account === undefined
                  ? null
                  : accountJson(account, accountEncoding, undefined, (a) => chain.account(a), answer),
              ),
      });
    },

    getSignatureStatuses(params) {
      requireParams(params, 1);
      const signatures = listParam(params[0], MAX_SIGNATURE_STATUSES, (item, i) =>
        signatureParam(item, `signatures[${i}]`),
      );
      const config = params[1];
      let searchHistory = false;
      if (config !== undefined && config !== null) {
        if (typeof config !== "object" || Array.isArray(config)) {
          throw invalidType(config, "struct RpcSignatureStatusConfig");
        }
        const search = (config as Record<string, unknown>).searchTransactionHistory;
        // Agave's config has no default for it: an object without it is refused.
        if (search === undefined) throw invalidParams("missing field `searchTransactionHistory`");
        searchHistory = booleanOf(config as Record<string, unknown>, "searchTransactionHistory", false);
      }
      const slot = chain.slot("processed");
      return withContext(
        slot,
        signatures.map((signature) => {
          const status = chain.status(signature);
          // Without a history search a validator answers from its status cache: the last 300 slots.
          if (status === null || (!searchHistory && status.slot < slot - STATUS_CACHE_SLOTS)) return null;
          return {
            slot: BigInt(status.slot),
            confirmations: status.confirmations === null ? null : BigInt(status.confirmations),
            err: status.err,
            status: status.err === null ? { Ok: null } : { Err: status.err },
            confirmationStatus: status.confirmationStatus,
          };
        }),
      );
    },

    getTransaction(params) {
      requireParams(params, 1);
      const signature = signatureParam(params[0], "signature");
      // The config may also be the encoding alone (the deprecated form).
      const config = typeof params[1] === "string" ? { encoding: params[1] } : configParam(params, 1);
      const encoding = transactionEncodingOf(config);
      const commitment = historyCommitment(config);
      const supported = config.maxSupportedTransactionVersion;
      if (supported !== undefined && supported !== null) u64Param(supported, "u8");
      const entry = chain.transaction(signature, commitment);
      if (entry === undefined) return null;
      if (entry.version === 0 && (supported === undefined || supported === null)) {
        throw new JsonRpcError(
          UNSUPPORTED_TRANSACTION_VERSION,
          'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
        );
      }
      return {
        slot: BigInt(entry.slot),
        transaction: encodedTransaction(entry, encoding),
        meta: encodedMeta(entry, encoding),
        blockTime: BigInt(chain.timeOf(entry.slot)),
        ...(supported === undefined || supported === null ? {} : { version: entry.version }),
      };
    },

    getSignaturesForAddress(params) {
      requireParams(params, 1);
      const address = pubkeyParam(params[0], "address");
      const config = configParam(params, 1);
      const commitment = historyCommitment(config);
      const limitValue = config.limit;
      const limit =
        limitValue === undefined || limitValue === null
          ? MAX_SIGNATURES_LIMIT
          : Number(u64Param(limitValue, "usize"));
      if (limit === 0 || limit > MAX_SIGNATURES_LIMIT)
        throw paramError(`Invalid limit; max ${MAX_SIGNATURES_LIMIT}`);
      const before = optionalSignature(config.before, "before");
      const until = optionalSignature(config.until, "until");
      contextSlot(config, commitment);
      const entries = chain.signaturesFor(
        address,
        { limit, ...(before === undefined ? {} : { before }), ...(until === undefined ? {} : { until }) },
        commitment,
      );
      return entries.map((entry) => {
        const status = chain.status(entry.signature);
        return {
          signature: entry.signature,
          slot: BigInt(entry.slot),
          err: entry.err,
          memo: entry.memo,
          blockTime: BigInt(chain.timeOf(entry.slot)),
          confirmationStatus: status?.confirmationStatus ?? "confirmed",
        };
      });
    },

    getFeeForMessage(params) {
      requireParams(params, 1);
      const text = stringParam(params[0]);
      const config = configParam(params, 1);
      const slot = contextSlot(config, commitmentOf(config));
      if (text.length > MAX_BASE64_SIZE) {
        throw paramError(
          `base64 encoded solana_message::versions::VersionedMessage too large: ${text.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${MAX_TRANSACTION_BYTES})`,
        );
      }
      const bytes = strictBase64(text);
      let fee: bigint | null;
      try {
        fee = chain.feeForMessage(bytes);
      } catch (error) {
        if (error instanceof TransactionSanitizeError) {
          throw paramError(`invalid transaction message: ${error.messageError}`);
        }
        if (!(error instanceof WireTransactionError)) throw error;
        throw paramError(
          `failed to deserialize solana_message::versions::VersionedMessage: ${error.message}`,
        );
      }
      return withContext(slot, fee);
    },

    requestAirdrop(params, _answer, caller) {
      requireParams(params, 2);
      const address = pubkeyParam(params[0], "pubkey");
      const lamports = u64Param(params[1]);
      configParam(params, 2);
      if (lamports === 0n || lamports > MAX_AIRDROP_LAMPORTS) {
        throw new JsonRpcError(
          -32600,
          `airdrop request failed: the local faucet gives from 1 lamport to ${MAX_AIRDROP_LAMPORTS} lamports (10,000 SOL) at once`,
        );
      }
      // Every airdrop is a transaction kept in the ledger and an account kept in the state: a
      // client flooding the faucet would grow both as fast as it can ask, as a faucet's caps exist for.
      const decision = airdrops.take(caller.address ?? "in-process", airdropPolicy);
      if (!decision.allowed) {
        throw new JsonRpcError(
          -32600,
          `airdrop request failed: rate limit reached for this client (${airdropPolicy.rate} airdrops a second, bursts of ${airdropPolicy.burst}; LOCAL_SOLANA_AIRDROPS_PER_SECOND, LOCAL_SOLANA_AIRDROP_BURST): try again in ${decision.retryAfterSeconds} s`,
        );
      }
      return chain.airdrop(address, lamports);
    },

    minimumLedgerSlot() {
      // The oldest slot whose transactions are still kept (LOCAL_SOLANA_HISTORY), as a validator
      // tells the first slot of the history it has not cleaned up.
      return BigInt(chain.ledger.firstSlot ?? chain.slot("processed"));
    },
  };
}

/** getTransaction and getSignaturesForAddress serve confirmed or finalized history only. */
function historyCommitment(config: Record<string, unknown>): Commitment {
  const commitment = commitmentOf(config);
  if (commitment === "processed") throw paramError("Method does not support commitment below `confirmed`");
  return commitment;
}

function optionalSignature(value: unknown, name: string): string | undefined {
  return value === undefined || value === null ? undefined : signatureParam(value, name);
}

/** A transaction param: base58 (the default) or base64 text, within a packet's size. */
function transactionBytes(value: unknown, config: Record<string, unknown>): Uint8Array {
  const text = stringParam(value);
  const encoding = config.encoding ?? "base58";
  if (encoding === "base58" || encoding === "binary") {
    if (text.length > MAX_BASE58_SIZE) {
      throw paramError(
        `base58 encoded solana_transaction::versioned::VersionedTransaction too large: ${text.length} bytes (max: encoded/raw ${MAX_BASE58_SIZE}/${MAX_TRANSACTION_BYTES})`,
      );
    }
    try {
      return getBase58Encoder().encode(text) as Uint8Array;
    } catch {
      throw paramError("invalid base58 encoding: InvalidCharacter");
    }
  }
  if (encoding === "base64") {
    if (text.length > MAX_BASE64_SIZE) {
      throw paramError(
        `base64 encoded solana_transaction::versioned::VersionedTransaction too large: ${text.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${MAX_TRANSACTION_BYTES})`,
      );
    }
    return strictBase64(text);
  }
  throw paramError(`unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`);
}

const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Standard base64 read strictly, as Agave's base64 crate reads it, with its errors in Rust's Debug
 * form ("invalid base64 encoding: InvalidByte(7, 95)", "invalid base64 encoding: InvalidPadding").
 */
function strictBase64(text: string): Uint8Array {
  if (!BASE64_ALPHABET.test(text)) {
    const index = [...text].findIndex(
      (c, i) => !/[A-Za-z0-9+/=]/.test(c) || (c === "=" && i < text.length - 2),
    );
    const at = Math.max(0, index);
    throw paramError(`invalid base64 encoding: InvalidByte(${at}, ${text.charCodeAt(at)})`);
  }
  if (text.length % 4 !== 0) throw paramError("invalid base64 encoding: InvalidPadding");
  return Buffer.from(text, "base64");
}

/** Runs a chain call; bytes that are no transaction become Agave's deserialize error. */
function run<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    if (error instanceof TransactionSanitizeError) throw paramError(`invalid transaction: ${error.message}`);
    if (error instanceof WireTransactionError) {
      throw paramError(
        `failed to deserialize solana_transaction::versioned::VersionedTransaction: ${error.message}`,
      );
    }
    throw error;
  }
}

/** A simulation as simulateTransaction (and a preflight failure's data) shows it (Agave 3.x). */
function simulationJson(
  simulation: Simulation,
  replacement: { blockhash: string; lastValidBlockHeight: number } | undefined,
  withInner: boolean,
) {
  const { balances } = simulation;
  return {
    err: simulation.err?.json ?? null,
    logs: simulation.logs,
    accounts: null as unknown,
    unitsConsumed: simulation.unitsConsumed,
    loadedAccountsDataSize: simulation.loadedAccountsDataSize,
    returnData:
      simulation.returnData === null
        ? null
        : { programId: simulation.returnData.programId, data: [simulation.returnData.data, "base64"] },
    // Agave parses a simulation's inner instructions whatever the encoding (jsonParsed's shape).
    innerInstructions: withInner
      ? parsedInnerInstructions(simulation.innerInstructions, simulation.accountKeys)
      : null,
    replacementBlockhash:
      replacement === undefined
        ? null
        : {
            blockhash: replacement.blockhash,
            lastValidBlockHeight: BigInt(replacement.lastValidBlockHeight),
          },
    fee: simulation.fee,
    preBalances: balances?.pre.lamports ?? null,
    postBalances: balances?.post.lamports ?? null,
    preTokenBalances: balances?.pre.tokens ?? null,
    postTokenBalances: balances?.post.tokens ?? null,
    loadedAddresses: simulation.loadedAddresses as unknown,
  };
}
