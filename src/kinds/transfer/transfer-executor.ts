import type { JsonObject } from "../../agent/agent-store.ts";
import type { Chain, TransferChain } from "../../chain/chain.ts";
import type { DelegateKeys } from "../../chain/delegate-keys.ts";
import type { SigningKey } from "../../chain/ed25519-key.ts";
import type { AssociatedAccountOf, TokenRef } from "../../chain/token-transactions.ts";
import { parseV0Message } from "../../chain/v0-message.ts";
import { baseUnits } from "../../domain/base-units.ts";
import { UnavailableError } from "../../domain/errors.ts";
import type { Execution, ExecutionResult, Executor } from "../../scheduler/executor.ts";
import type { SentTransaction } from "../../scheduler/run-store.ts";
import {
  createSentTransactions,
  EXPIRED,
  type SendHooks,
  type SentOutcome,
  signingExecutor,
} from "../../scheduler/sent-transactions.ts";
import type { PriceSource } from "../../token/token-source.ts";
import { tokenTransactionFromChain, uiAmount } from "../../token/token-transaction-from-chain.ts";
import { describe, spendableAccount, TOKEN_ERRORS, type TransferCaps } from "../spend-checks.ts";

/**
 * The transaction builders, loaded on the first transfer: they bring @solana/kit whole (17 MB in
 * a process), which a process that runs no transfer need not carry.
 */
const loadTokenTransactions = () => import("../../chain/token-transactions.ts");

/** Points where the exactly-once test across replicas kills a process. */
export type TransferHooks = SendHooks;

export interface TransferExecutorOptions {
  readonly chain: Chain;
  readonly transfers: TransferChain;
  /** The service's key: the fee payer of every run, never a delegate. */
  readonly executor: SigningKey;
  /** The delegate of each (owner, wallet): the authority that signs the transfer. */
  readonly delegates: DelegateKeys;
  /** The mint of a token symbol of the token list. */
  readonly mintOf: (symbol: string) => string | undefined;
  readonly prices: PriceSource;
  readonly caps: TransferCaps;
  /** How often a sent transaction's status is asked for, and how often it is sent again. */
  readonly pollMs?: number;
  /** Test hooks: called after a new transaction was kept and before it goes out, and right after. */
  readonly hooks?: TransferHooks;
  /**
   * TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY: how many of one agent's runs a UTC day may create the
   * destination's missing token account, the executor paying its rent (1 when absent).
   */
  readonly maxAccountCreationsPerDay?: number;
  /** Told of the rent, in lamports, of every destination account a landed run created (metrics). */
  readonly onRentSpent?: (lamports: number) => void;
}

type Failure = Extract<ExecutionResult, { ok: false }>;
const retry = (error: string): Failure => ({ ok: false, error });
const final = (error: string): Failure => ({ ok: false, error, retryable: false });

/**
 * Transfer agents' runs on the chain, without holding anyone's key: each run is a transferChecked
 * from the source's associated token account to the destination's, signed by the delegate of the agent's (owner, source wallet) pair, which
 * the wallet approved, with the executor as fee payer. The on-chain allowance caps what it can
 * move; the owner's revoke ends it. An approval made for another owner's delegate is useless here:
 * the agent's own delegate is not the account's delegate, and the run fails before signing.
 *
 * Exactly once per (agent, slot), across retries, replicas, crashes and expired blockhashes:
 * - every signed transaction is kept in the slot's journal before it is sent (the journal's
 *   insert comes before its lease check, so a replica that took the slot over either sees it or
 *   is the reason it is not sent);
 * - an attempt first asks the chain about every transaction kept for the slot: one that landed
 *   without error is the run's success; while one may still land (no status, its blockhash still
 *   valid) the newest of those is sent again, never a new one; only when all have expired (or
 *   failed) is a new one signed.
 *
 * Before signing: the caps per run and per UTC day (in dollars at the price source's price), then
 * the source account itself, so that the reasons no retry can mend (no source account, frozen, no
 * allowance or one below the amount, too little balance) fail the slot at once with both figures.
 *
 * Who pays: the approval's transaction created the destination's account at the wallet's cost. A
 * destination that closed it since (and so took its rent back) gets it created again by a run, the
 * executor paying the rent, at most `maxAccountCreationsPerDay` times a UTC day per agent; past
 * that the slot is skipped. Otherwise a recipient could close it after every run and farm the
 * executor's rent.
 */
export function createTransferExecutor(options: TransferExecutorOptions): Executor {
  const { chain, transfers, executor, delegates, prices, caps } = options;
  const maxCreations = options.maxAccountCreationsPerDay ?? 1;
  const sent = createSentTransactions({ transfers, pollMs: options.pollMs, hooks: options.hooks });
  /** Associated token accounts derived once per wallet and token (made with the builders). */
  let accountOf: AssociatedAccountOf | undefined;

  return signingExecutor(run);

  async function run(execution: Execution): Promise<ExecutionResult> {
    const { agent, journal, signal } = execution;
    const {
      source,
      destination,
      amount,
      token: symbol,
    } = agent.config as {
      source: string;
      destination: string;
      amount: number;
      token: string;
    };
    const mint = options.mintOf(symbol);
    const mintAccount = mint === undefined ? undefined : await chain.getMint(mint, signal);
    if (mint === undefined || mintAccount === undefined) return final(`${symbol} has no mint on this chain`);
    // The amount was checked against the decimals of CreateAgent's time: a mint rewritten since
    // (a cheatcode, another chain behind the same URL) would make it move another value.
    if (agent.decimals !== undefined && agent.decimals !== mintAccount.decimals) {
      return final(
        `${symbol}'s mint has ${mintAccount.decimals} decimals on this chain, not the ${agent.decimals} this agent's amount was checked with: the agent does not run; create it again to use this mint`,
      );
    }
    const token: TokenRef = { mint, program: mintAccount.program, decimals: mintAccount.decimals };
    const units = baseUnits(amount, token.decimals);
    const show = (value: bigint) => `${uiAmount(value, token.decimals)} ${symbol}`;
    const moving: Moving = { symbol, token, units, signal, source, destination };

    // What earlier attempts sent decides whether this one may sign at all.
    const earlier = await sent.resume(journal, signal);
    if (earlier !== undefined) return settled(earlier, moving);

    // Caps, then the source account: reasons no retry can mend fail the slot now.
    const price = await usdPriceOf(token.mint, symbol);
    if (typeof price === "string") return retry(price);
    const usd = amount * price;
    if (usd > caps.perRunUsd) {
      return final(`${show(units)} (${usd.toFixed(2)} USD) is over the cap of ${caps.perRunUsd} USD per run`);
    }
    const today = await journal.succeededToday();
    const movedToday = today.reduce(
      (sum, r) => sum + (typeof r.result?.usdValue === "number" ? r.result.usdValue : 0),
      0,
    );
    if (movedToday + usd > caps.perDayUsd) {
      return final(
        `moving ${usd.toFixed(2)} USD more would pass the cap of ${caps.perDayUsd} USD per day (${movedToday.toFixed(2)} USD moved today)`,
      );
    }
    const { createAssociatedAccountCache, delegatedTransferTransaction } = await loadTokenTransactions();
    accountOf ??= createAssociatedAccountCache();
    const [sourceAccount, destinationAccount] = await Promise.all([
      accountOf(source, token),
      accountOf(destination, token),
    ]);
    const delegate = delegates.keyOf(agent.owner, source);
    // Both accounts in one read: the source's for what it can spend, the destination's for whether
    // this run would have to create it (and pay its rent).
    const [sourceState, destinationState] = await transfers.getTokenAccounts(
      [sourceAccount, destinationAccount],
      signal,
    );
    const spendable = spendableAccount(
      sourceState,
      { delegate: delegate.address, sharedExecutor: executor.address, symbol, units, show },
      { holder: "the source", wallet: "the source wallet", action: "move" },
    );
    if ("problem" in spendable) return final(spendable.problem);
    const createDestination = destinationState === undefined;
    if (createDestination) {
      const created = today.filter((r) => r.result?.destinationCreated === true).length;
      if (created >= maxCreations) return noDestinationAccount(moving, destinationAccount, created);
    }

    const lifetime = await transfers.getLatestBlockhash(signal);
    const built = await delegatedTransferTransaction({
      feePayer: executor,
      authority: delegate,
      source,
      destination,
      token,
      amount: units,
      lifetime,
      accountOf,
      createDestination,
      memo: `token-agent-service run ${execution.idempotencyKey}`,
    });
    const outcome = await sent.send(
      journal,
      {
        signature: built.signature,
        lastValidBlockHeight: lifetime.lastValidBlockHeight,
        transaction: built.transaction,
      },
      signal,
    );
    if (outcome === "lease_lost") return retry("the run lost its hold on this slot before sending");
    return settled(outcome, moving);
  }

  /** A slot skipped: the destination has no token account, and the agent's creations are spent. */
  function noDestinationAccount(moving: Moving, account: string, created: number): ExecutionResult {
    const { symbol, destination, units, token } = moving;
    return {
      ok: true,
      skipped: true,
      result: {
        kind: "transfer",
        skipped: true,
        reason: `the destination ${destination} has no ${symbol} account (its associated token account ${account}), and this agent's runs already created it ${created} time${created === 1 ? "" : "s"} today, the most TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY allows (${maxCreations}): the destination's owner, or the source wallet, must create it again; nothing was sent`,
        token: symbol,
        mint: token.mint,
        amount: uiAmount(units, token.decimals),
        amountUnits: units.toString(),
        recipient: destination,
        destinationAccount: account,
      },
    };
  }

  /** The run's result from where its transaction ended up. */
  function settled(outcome: SentOutcome, moving: Moving): Promise<ExecutionResult> | ExecutionResult {
    if (outcome.kind === "landed") return succeeded(outcome.tx, moving, outcome.slot);
    if (outcome.kind === "failed")
      return failedOnChain(outcome.err, executor.address, outcome.tx.transaction);
    return retry(EXPIRED);
  }

  /** The token's price in US dollars, or why there is none (a retry may find one). */
  async function usdPriceOf(mint: string, symbol: string): Promise<number | string> {
    try {
      const [quote] = await prices.pricesOf([mint]);
      if (quote === undefined || quote.unpriced)
        return `no price for ${symbol} to check the transfer caps against`;
      return quote.price;
    } catch (error) {
      if (error instanceof UnavailableError)
        return `no price for ${symbol} to check the transfer caps against: ${error.message}`;
      throw error;
    }
  }

  /** The run's record of a landed transfer: signature, slot, fee, and what moved, from the chain. */
  /**
   * The run's record of a landed transfer. With SPL Token, everything in it is known already: the
   * status gave the slot, the transaction is ours (its signatures set the fee: Solana's base fee per
   * signature, and no priority fee is asked), and a transferChecked that succeeded moved exactly its
   * amount from the source to the destination. Token-2022 mints may take a transfer fee or run a
   * hook, so what moved there is read back from the landed transaction.
   */
  async function succeeded(tx: SentTransaction, moving: Moving, slot: bigint): Promise<ExecutionResult> {
    const { symbol, token, units, signal } = moving;
    let landedFacts: { slot: number; fee: number; sender: string; recipient: string; moved: number };
    if (token.program === "spl-token") {
      landedFacts = {
        slot: Number(slot),
        fee: LAMPORTS_PER_SIGNATURE * signatureCount(tx.transaction),
        sender: moving.source,
        recipient: moving.destination,
        moved: uiAmount(units, token.decimals),
      };
    } else {
      const landed = await chain.getTransaction(tx.signature, signal);
      if (landed === undefined) throw new UnavailableError("the transfer landed but cannot be read back yet");
      const moved = tokenTransactionFromChain(landed, token.mint);
      landedFacts = {
        slot: Number(landed.slot),
        fee: Number(landed.fee),
        sender: moved.sender,
        recipient: moved.recipient,
        moved: moved.amount,
      };
    }
    // The destination's account this run created: the executor paid its rent (see the class comment).
    let rent: JsonObject = {};
    if (createsDestination(tx.transaction)) {
      const destinationAccount = await accountOf?.(moving.destination, token);
      const [created] =
        destinationAccount === undefined
          ? [undefined]
          : await transfers.getAccounts([destinationAccount], signal);
      // Closed again already: a token account of the program's own size (SPL Token's 165 bytes).
      const lamports = rentExempt(created?.data.length ?? 165);
      options.onRentSpent?.(lamports);
      rent = { destinationCreated: true, rentLamports: lamports };
    }
    // The transfer has landed whatever the price source says now; unpriced, it counts as 0 USD.
    const quoted = await usdPriceOf(token.mint, symbol);
    const price = typeof quoted === "number" ? quoted : 0;
    const amount = uiAmount(units, token.decimals);
    const result: JsonObject = {
      kind: "transfer",
      simulated: false,
      signature: tx.signature,
      slot: landedFacts.slot,
      fee: landedFacts.fee,
      token: symbol,
      mint: token.mint,
      amount,
      amountUnits: units.toString(),
      sender: landedFacts.sender,
      recipient: landedFacts.recipient,
      moved: landedFacts.moved,
      usdValue: Math.round(amount * price * 100) / 100,
      ...rent,
    };
    return { ok: true, result };
  }
}

/** What one run moves, between which wallets, and the signal that abandons it. */
interface Moving {
  readonly symbol: string;
  readonly token: TokenRef;
  readonly units: bigint;
  readonly signal: AbortSignal;
  readonly source: string;
  readonly destination: string;
}

/** Solana's base fee, per signature of a transaction. */
const LAMPORTS_PER_SIGNATURE = 5000;

/** The signatures a wire transaction (base64) carries: its first byte, a compact-u16 below 128. */
function signatureCount(transaction: string): number {
  return Buffer.from(transaction.slice(0, 4), "base64")[0] ?? 1;
}

/**
 * Transaction errors about the fee payer, which is always the executor: it has no account (no
 * lamports at all) or too few lamports for the fee.
 */
const FEE_PAYER_ERRORS = new Set(["AccountNotFound", "InsufficientFundsForFee"]);

/** A transaction error from the chain, as a reason for the run's owner. */
function failedOnChain(err: unknown, feePayer: string, transaction: string): Failure {
  // Retried: the operator may fund it before the slot's attempts run out.
  if (typeof err === "string" && FEE_PAYER_ERRORS.has(err)) {
    return retry(`the executor cannot pay fees: fund ${feePayer} (the transfer failed on chain: ${err})`);
  }
  const instruction = (err as { InstructionError?: [unknown, unknown] } | null)?.InstructionError;
  const custom = (instruction?.[1] as { Custom?: unknown } | undefined)?.Custom;
  const code = typeof custom === "bigint" ? Number(custom) : typeof custom === "number" ? custom : undefined;
  // A run's transaction that creates the destination's token account does so at instruction 0
  // (the executor pays its rent), and the transfer follows. Custom(1) means "insufficient funds"
  // in both, but only the transfer's is about the owner's balance or allowance.
  if (instruction !== undefined && Number(instruction[0]) === 0 && createsDestination(transaction)) {
    return code === 1
      ? retry(`the executor cannot pay the rent of the destination's new token account: fund ${feePayer}`)
      : retry(`creating the destination's token account failed on chain (${describe(err)})`);
  }
  if (code !== undefined && TOKEN_ERRORS[code] !== undefined) return final(TOKEN_ERRORS[code] as string);
  return retry(`the transfer failed on chain (${describe(err)})`);
}

/**
 * Whether a run's transaction (base64, as kept in the journal) creates the destination's token
 * account: its first instruction is the associated token program's. Read from the bytes, so that
 * an attempt that resumes another's transaction knows it as well as the one that built it.
 */
function createsDestination(transaction: string): boolean {
  const wire = Buffer.from(transaction, "base64");
  // A compact-u16 below 128 is one byte: a transfer has two signers.
  const message = parseV0Message(wire.subarray(1 + 64 * (wire[0] ?? 0)));
  const first = message.instructions[0];
  return first !== undefined && message.staticAccounts[first.programIdIndex] === ASSOCIATED_TOKEN_PROGRAM;
}

const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

/** Lamports that keep an account of `bytes` rent-exempt (Solana's rent: 3,480 lamports a byte-year, two years, 128 bytes of header). */
function rentExempt(bytes: number): number {
  return (128 + bytes) * 3_480 * 2;
}
