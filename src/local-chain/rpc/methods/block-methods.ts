import { getBase58Encoder } from "@solana/kit";
import {
  accountsOnlyMeta,
  accountsOnlyTransaction,
  encodedMeta,
  encodedTransaction,
  parsedAccountKeys,
  type TransactionEncoding,
  transactionEncodingOf,
} from "../../encoding/encoded-transaction.ts";
import type { Commitment } from "../../runtime/block-clock.ts";
import type { LedgerEntry } from "../../runtime/ledger.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import type { AnswerBudget } from "../answer-budget.ts";
import {
  invalidParams,
  JsonRpcError,
  paramError,
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
  slotParam,
  u64Param,
} from "../rpc-params.ts";

/** Agave's custom errors for blocks (rpc-client-api's custom_error.rs). */
const BLOCK_CLEANED_UP = -32001;
const BLOCK_NOT_AVAILABLE = -32004;
/** getBlocks' widest range (MAX_GET_CONFIRMED_BLOCKS_RANGE). */
const MAX_GET_BLOCKS_RANGE = 500_000;
/** Slots getRecentPrioritizationFees covers, as Agave's prioritization fee cache keeps them. */
const PRIORITIZATION_FEE_SLOTS = 150;
/** Accounts getRecentPrioritizationFees takes (MAX_TX_ACCOUNT_LOCKS). */
const MAX_PRIORITIZATION_FEE_ACCOUNTS = 128;
/** What a slot number costs in getBlocks' answer, charged before it is built. */
const SLOT_NUMBER_BYTES = 10;
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const SET_COMPUTE_UNIT_PRICE = 3;

type TransactionDetails = "full" | "accounts" | "signatures" | "none";

/**
 * Blocks: getBlock, getBlocks, getBlockTime, getFirstAvailableBlock and
 * getRecentPrioritizationFees, from the ledger. The local chain skips no slot, so every slot from
 * the first whose history is kept (minimumLedgerSlot) to the commitment's slot is a block, holding
 * the transactions that landed in it (often none). A block's blockhash is the one the chain gave
 * that slot while the chain still holds it (the last 182 slots), otherwise a stand-in derived from
 * the chain's genesis and the slot (see docs/local-chain.md).
 */
export function blockMethods(chain: LocalChain): Record<string, RpcMethod> {
  const firstAvailable = () => chain.ledger.firstSlot ?? chain.slot("processed");
  /** Refuses a slot the chain cannot show a block of at `commitment`, as Agave words it. */
  const checkBlockSlot = (slot: bigint, commitment: Commitment) => {
    if (slot > BigInt(chain.slot(commitment))) {
      throw new JsonRpcError(BLOCK_NOT_AVAILABLE, `Block not available for slot ${slot}`);
    }
    const first = firstAvailable();
    if (slot < BigInt(first)) {
      throw new JsonRpcError(
        BLOCK_CLEANED_UP,
        `Block ${slot} cleaned up, does not exist on node. First available block: ${first}`,
      );
    }
  };

  return {
    getBlock(params, answer) {
      requireParams(params, 1);
      const requested = slotParam(params[0]);
      const config = typeof params[1] === "string" ? { encoding: params[1] } : configParam(params, 1);
      const encoding = transactionEncodingOf(config);
      const details = transactionDetailsOf(config);
      const rewards = booleanOf(config, "rewards", true);
      const commitment = historyCommitment(config);
      const supported = config.maxSupportedTransactionVersion;
      if (supported !== undefined && supported !== null) u64Param(supported, "u8");
      const withVersion = supported !== undefined && supported !== null;
      checkBlockSlot(requested, commitment);
      // Within the chain's slots from here on, so a number holds it exactly.
      const slot = Number(requested);
      const entries = chain.ledger.inSlot(slot);
      const block: Record<string, unknown> = {
        previousBlockhash: blockhashOf(chain, Math.max(0, slot - 1)),
        blockhash: blockhashOf(chain, slot),
        parentSlot: BigInt(Math.max(0, slot - 1)),
      };
      if (details === "full" || details === "accounts") {
        block.transactions = entries.map((entry) => {
          checkVersion(entry, withVersion);
          chargeEntry(answer, entry, encoding);
          const version = withVersion ? { version: entry.version } : {};
          return details === "full"
            ? {
                transaction: encodedTransaction(entry, encoding),
                meta: encodedMeta(entry, encoding, { rewards }),
                ...version,
              }
            : {
                transaction: accountsOnlyTransaction(entry),
                meta: accountsOnlyMeta(entry, rewards),
                ...version,
              };
        });
      } else if (details === "signatures") {
        answer.charge(entries.length * 90);
        block.signatures = entries.map((entry) => entry.signature);
      }
      if (rewards) block.rewards = [];
      block.blockTime = BigInt(chain.timeOf(slot));
      block.blockHeight = BigInt(slot);
      return block;
    },

    getBlocks(params, answer) {
      requireParams(params, 1);
      const start = clampedSlot(slotParam(params[0]));
      // The second param is the end slot, or the config in its place (RpcBlocksConfigWrapper).
      const second = params[1];
      const secondIsConfig = second !== null && typeof second === "object" && !Array.isArray(second);
      const end =
        second === undefined || second === null || secondIsConfig
          ? undefined
          : clampedSlot(slotParam(second));
      const config = secondIsConfig ? configParam(params, 1) : configParam(params, 2);
      const commitment = historyCommitment(config);
      const top = contextSlotOf(chain, config, commitment);
      const last = Math.min(end ?? start + MAX_GET_BLOCKS_RANGE, top);
      if (last < start) return [];
      if (last - start > MAX_GET_BLOCKS_RANGE) {
        throw paramError(`Slot range too large; max ${MAX_GET_BLOCKS_RANGE}`);
      }
      const first = Math.max(start, firstAvailable());
      if (last < first) return [];
      answer.charge((last - first + 1) * SLOT_NUMBER_BYTES);
      // Plain numbers (slots stay far below 2^53): up to 500,001 of them, written without a
      // bigint each.
      const slots: number[] = new Array(last - first + 1);
      for (let i = 0; i < slots.length; i++) slots[i] = first + i;
      return slots;
    },

    getBlockTime(params) {
      requireParams(params, 1);
      const slot = slotParam(params[0]);
      checkBlockSlot(slot, "confirmed");
      return BigInt(chain.timeOf(Number(slot)));
    },

    getFirstAvailableBlock: () => BigInt(firstAvailable()),

    getRecentPrioritizationFees(params) {
      const value = params[0];
      const accounts =
        value === undefined || value === null
          ? []
          : listParam(value, MAX_PRIORITIZATION_FEE_ACCOUNTS, (item, i) =>
              pubkeyParam(item, `accounts[${i}]`),
            );
      // Agave's cache answers for finalized blocks only.
      const top = chain.slot("finalized");
      const from = Math.max(firstAvailable(), top - PRIORITIZATION_FEE_SLOTS + 1, 0);
      const fees: { slot: bigint; prioritizationFee: bigint }[] = [];
      for (let slot = from; slot <= top; slot++) {
        fees.push({ slot: BigInt(slot), prioritizationFee: slotFee(chain.ledger.inSlot(slot), accounts) });
      }
      return fees;
    },
  };
}

/**
 * A slot as a number for range arithmetic: beyond 2^53 no slot exists on any chain, so such a
 * bound only says "to the end" (getBlocks caps it at the commitment's slot).
 */
function clampedSlot(slot: bigint): number {
  return slot > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(slot);
}

function historyCommitment(config: Record<string, unknown>): Commitment {
  const commitment = commitmentOf(config);
  if (commitment === "processed") throw paramError("Method does not support commitment below `confirmed`");
  return commitment;
}

function transactionDetailsOf(config: Record<string, unknown>): TransactionDetails {
  const value = config.transactionDetails;
  if (value === undefined || value === null) return "full";
  if (value === "full" || value === "accounts" || value === "signatures" || value === "none") return value;
  if (typeof value === "string") {
    throw invalidParams(
      `unknown variant \`${value}\`, expected one of \`full\`, \`signatures\`, \`none\`, \`accounts\``,
    );
  }
  throw invalidType(value, "a transaction details level");
}

function checkVersion(entry: LedgerEntry, withVersion: boolean): void {
  if (entry.version === 0 && !withVersion) {
    throw new JsonRpcError(
      UNSUPPORTED_TRANSACTION_VERSION,
      'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    );
  }
}

/** Charges a transaction's share of a block's answer before it is encoded (jsonParsed is wordier). */
function chargeEntry(answer: AnswerBudget, entry: LedgerEntry, encoding: TransactionEncoding): void {
  const stored = entry.transactionJson.length + entry.metaJson.length;
  answer.charge(encoding === "jsonParsed" ? stored * 2 : stored);
}

/** A block's blockhash: the one the chain gave its slot (see ../../runtime/block-clock.ts). */
function blockhashOf(chain: LocalChain, slot: number): string {
  return chain.clock.blockhashOf(slot);
}

/**
 * A slot's prioritization fee as Agave's cache reports it: the lowest compute-unit price of its
 * transactions (0 for none), raised to the lowest price paid by those writing each account asked
 * about.
 */
function slotFee(entries: readonly LedgerEntry[], accounts: readonly string[]): bigint {
  let lowest: bigint | undefined;
  const byAccount = new Map<string, bigint>();
  for (const entry of entries) {
    const json = JSON.parse(entry.transactionJson);
    const price = computeUnitPrice(json, entry.accounts);
    if (lowest === undefined || price < lowest) lowest = price;
    if (accounts.length === 0) continue;
    const meta = JSON.parse(entry.metaJson) as {
      loadedAddresses?: { writable: string[]; readonly: string[] };
    };
    for (const key of parsedAccountKeys(json, meta.loadedAddresses)) {
      if (!key.writable || !accounts.includes(key.pubkey)) continue;
      const known = byAccount.get(key.pubkey);
      if (known === undefined || price < known) byAccount.set(key.pubkey, price);
    }
  }
  let fee = lowest ?? 0n;
  for (const price of byAccount.values()) if (price > fee) fee = price;
  return fee;
}

const base58Encoder = getBase58Encoder();
const base58ToBytes = (text: string) => Buffer.from(base58Encoder.encode(text) as Uint8Array);

/** The micro-lamports per compute unit a transaction set (ComputeBudget SetComputeUnitPrice), or 0. */
function computeUnitPrice(
  json: { message: { instructions: { programIdIndex: number; data: string }[] } },
  keys: readonly string[],
): bigint {
  for (const instruction of json.message.instructions) {
    if (keys[instruction.programIdIndex] !== COMPUTE_BUDGET) continue;
    const data = base58ToBytes(instruction.data);
    if (data[0] === SET_COMPUTE_UNIT_PRICE && data.length >= 9) return data.readBigUInt64LE(1);
  }
  return 0n;
}
