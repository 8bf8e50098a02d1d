import { createPublicKey, type KeyObject, verify } from "node:crypto";
import {
  type Address,
  getAddressEncoder,
  getBase64Decoder,
  getCompiledTransactionMessageEncoder,
  getTransactionEncoder,
  type Transaction,
} from "@solana/kit";
import { Clock, EpochSchedule, FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from "litesvm";
import { base58AddressBytes, base58Text } from "../../chain/base58-address.ts";
import { stringifyJsonBigInts } from "../../chain/json-bigints.ts";
import type { SavedAccount } from "../state/chain-state.ts";
import {
  AccountBytesExceededError,
  type AccountBytesFigures,
  accountDataBytes,
  createAccountBytes,
} from "./account-bytes.ts";
import {
  BLOCKHASH_VALID_BLOCKS,
  type BlockClock,
  type Commitment,
  FINALIZATION_SLOTS,
} from "./block-clock.ts";
import { createBoundedMemo } from "./bounded-memo.ts";
import { type ChainAccount, RENT_EXEMPT_EPOCH } from "./chain-account.ts";
import type { ChainEvents } from "./chain-events.ts";
import type { Ledger, LedgerEntry, SignatureRange } from "./ledger.ts";
import { svmAccounts } from "./svm-accounts.ts";
import { svmTransactions } from "./svm-transactions.ts";
import { type RawAccount, readMint, readTokenAccount, uiTokenAmount } from "./token-accounts.ts";
import { type TransactionError, transactionError, transactionErrorFrom } from "./transaction-error.ts";
import {
  decodeWireTransaction,
  transactionJsonOf,
  type WireTransaction,
  withBlockhash,
} from "./wire-transaction.ts";

const SLOTS_PER_EPOCH = 432_000n;

interface TokenBalanceJson {
  readonly accountIndex: number;
  readonly mint: string;
  readonly owner: string;
  readonly programId: string;
  readonly uiTokenAmount: ReturnType<typeof uiTokenAmount>;
}

export interface Balances {
  readonly lamports: readonly bigint[];
  readonly tokens: readonly TokenBalanceJson[];
}
const LOOKUP_TABLE_PROGRAM = "AddressLookupTab1e1111111111111111111111111";

/** What a simulation (or a preflight) found. */
/** What a simulation (or a preflight) found, as Agave 3.x reports it. */
export interface Simulation {
  readonly err: TransactionError | null;
  readonly logs: readonly string[];
  readonly unitsConsumed: bigint;
  readonly returnData: { programId: string; data: string } | null;
  /**
   * Compiled, as the json encoding shows them; simulateTransaction parses them with `accountKeys`.
   * Empty unless asked for (simulate's `innerInstructions`): a preflight's answer has none.
   */
  readonly innerInstructions: {
    index: number;
    instructions: { programIdIndex: number; accounts: number[]; data: string; stackHeight: number }[];
  }[];
  /** Every key the transaction names (static, then loaded), which the instructions index. */
  readonly accountKeys: readonly string[];
  /** Accounts after the simulation, for the addresses asked for (undefined: no account). */
  readonly accounts: readonly (RawAccount | undefined)[];
  /** null when the fee was never worked out (an unknown blockhash, a bad signature). */
  readonly fee: bigint | null;
  /** Lamports and token balances before and after; null when the transaction was not loaded. */
  readonly balances: { readonly pre: Balances; readonly post: Balances } | null;
  readonly loadedAddresses: WireTransaction["loaded"];
  /** Bytes of the accounts the transaction loads, each counted with 64 bytes of its own. */
  readonly loadedAccountsDataSize: number;
}

export type SendOutcome =
  /** Accepted: it landed (maybe failed, paying its fee), or was dropped, as a cluster drops it. */
  | { readonly kind: "sent"; readonly signature: string }
  /** The preflight simulation failed (a bad signature included, as Agave 3.x has it); nothing was sent. */
  | { readonly kind: "preflight-failed"; readonly simulation: Simulation };

export interface SignatureStatus {
  readonly slot: number;
  readonly confirmations: number | null;
  readonly err: unknown;
  readonly confirmationStatus: "processed" | "confirmed" | "finalized";
}

/**
 * An account LiteSVM refuses to hold as given (an executable one it cannot load as a program);
 * nothing was written. `reason` is LiteSVM's.
 */
export class AccountRefusedError extends Error {
  override readonly name = "AccountRefusedError";
  readonly reason: string;

  constructor(reason: string, options?: ErrorOptions) {
    super(`the account was refused: ${reason}`, options);
    this.reason = reason;
  }
}

/** An airdrop the faucet cannot make a new transaction of (the same one, many times in a few slots). */
export class AirdropRefusedError extends Error {
  override readonly name = "AirdropRefusedError";
}

export interface LocalChain {
  /** Produces the slot the wall clock is in, if it has not been produced; returns it. */
  tick(): number;
  slot(commitment: Commitment): number;
  latestBlockhash(commitment: Commitment): { blockhash: string; lastValidBlockHeight: number };
  isBlockhashValid(blockhash: string): boolean;
  account(address: string): ChainAccount | undefined;
  programAccounts(program: string): { address: Address; account: ChainAccount }[];
  /**
   * Writes an account as given (its rentEpoch too: LiteSVM keeps none of its own); throws
   * AccountRefusedError for one LiteSVM will not hold, AccountBytesExceededError for one that
   * would grow the chain's account data past its bound.
   */
  setAccount(address: string, account: ChainAccount): void;
  rentExemption(size: number): bigint;
  send(bytes: Uint8Array, options: { skipPreflight: boolean }): SendOutcome;
  simulate(
    bytes: Uint8Array,
    options: {
      sigVerify: boolean;
      replaceRecentBlockhash: boolean;
      accounts: readonly string[];
      /** Read the inner instructions out of LiteSVM (left empty otherwise: only a caller that asks shows them). */
      innerInstructions?: boolean;
    },
  ): { simulation: Simulation; replacement?: { blockhash: string; lastValidBlockHeight: number } };
  /** The fee of a message, or null when its blockhash is no longer valid (and no durable nonce's). */
  feeForMessage(messageBytes: Uint8Array): bigint | null;
  status(signature: string): SignatureStatus | null;
  transaction(signature: string, commitment: Commitment): LedgerEntry | undefined;
  signaturesFor(
    address: string,
    range: Omit<SignatureRange, "maxSlot">,
    commitment: Commitment,
  ): LedgerEntry[];
  /** Sends `lamports` from the faucet; returns the airdrop's signature. */
  airdrop(address: string, lamports: bigint): string;
  /** Unix seconds of a slot. */
  timeOf(slot: number): number;
  /**
   * Every account that differs from a fresh LiteSVM's: what transactions wrote and cheatcodes set.
   * Only the accounts written since the last call are read from LiteSVM again, so a save of a
   * large chain does not hold the event loop for long.
   */
  savedAccounts(): [string, SavedAccount][];
  /** Bytes of account data held, and their bound (see account-bytes.ts). */
  readonly accountBytes: AccountBytesFigures;
  readonly ledger: Ledger;
  readonly clock: BlockClock;
  readonly svm: LiteSVM;
}

export interface LocalChainOptions {
  readonly svm: LiteSVM;
  readonly clock: BlockClock;
  readonly ledger: Ledger;
  /** Signs the faucet's airdrops: `sign(message)` gives its signature. */
  readonly faucet: { readonly address: Address; sign(message: Uint8Array): Uint8Array };
  /** Called after every change of state, so it can be saved. */
  readonly onChange?: () => void;
  /** Accounts written before, as saved (those of the state the chain was restored from). */
  readonly saved?: readonly (readonly [string, SavedAccount])[];
  /**
   * Keep each account a transaction writes as the state file holds it, from the read that
   * records its balance anyway, so that a save reads nothing from LiteSVM (~0.1 ms an account:
   * a second for 10,000 accounts written since the last save). For a chain whose state is saved.
   */
  readonly keepSavedAccounts?: boolean;
  /** Told of every slot produced and transaction landed, as they happen (the PubSub port listens). */
  readonly events?: ChainEvents;
  /**
   * Bytes of account data the chain may hold (LOCAL_SOLANA_MAX_ACCOUNT_BYTES): a transaction or
   * cheatcode that would grow it past them is refused. Undefined: no bound.
   */
  readonly maxAccountBytes?: number;
}

/**
 * A Solana chain in this process, on LiteSVM (a real Solana runtime with the SPL Token, Token-2022
 * and Associated Token Account programs). LiteSVM executes; this adds what a validator has and
 * LiteSVM does not: slots that follow the wall clock with a blockhash each, valid for 150 blocks;
 * a ledger of landed transactions with their balances before and after, indexed by address;
 * signature statuses and commitments; fees; and a faucet. The JSON-RPC methods
 * (`../rpc/json-rpc-handler.ts`) are written on top of it.
 */
export function createLocalChain(options: LocalChainOptions): LocalChain {
  const { svm, clock, ledger, faucet } = options;
  const changed = options.onChange ?? (() => {});
  const events = options.events;
  /**
   * What differs from a fresh LiteSVM (every account a transaction could write or a cheatcode
   * set), as last saved; `stale` are those written since, read again at the next save.
   */
  const saved = new Map<string, SavedAccount>(options.saved ?? []);
  const stale = new Set<string>();
  const accountBytes = createAccountBytes({
    saved: options.saved ?? [],
    ...(options.maxAccountBytes === undefined ? {} : { max: options.maxAccountBytes }),
  });
  const keepSavedAccounts = options.keepSavedAccounts ?? false;
  /**
   * rentEpochs other than u64::MAX, as surfnet_setAccount set them. LiteSVM's account setter keeps
   * none, so the chain does; a transaction that writes the account makes it rent-exempt's again,
   * as the runtime does when it loads a rent-exempt account for writing.
   */
  const rentEpochs = new Map<string, bigint>();
  for (const [address, account] of options.saved ?? []) {
    if (account.rentEpoch !== undefined) rentEpochs.set(address, BigInt(account.rentEpoch));
  }
  /**
   * Accounts as last read from LiteSVM, by address, until the chain writes them: a swap's
   * accounts are read for the service's check, its simulation (before and after) and its send,
   * about 60 reads a swap, most of the same unchanged accounts. Every write forgets what it may
   * have changed: a transaction its writable accounts (as soon as it has run), a cheatcode or an
   * undo the account it puts, and a new slot all of them (the runtime's sysvars move). Read only:
   * callers share what they are given, as they already shared an account between its reads.
   * Bounded: emptied when full, and only accounts of up to 10 KB.
   */
  const lastRead = new Map<string, ChainAccount | null>();
  /** Past the ledger's window, history goes, but never a transaction whose blockhash still lets it land. */
  const pruneHistory = () => ledger.prune(clock.slot - BLOCKHASH_VALID_BLOCKS);
  const addresses = getAddressEncoder();
  const base64 = getBase64Decoder();
  const encodeTransaction = getTransactionEncoder();

  /**
   * Freezes the working slot (and an idle gap's slots) and makes `slot` the working one. The
   * runtime gets a new blockhash, the new working slot's parent's: what a durable nonce advanced
   * in this slot takes, so a nonce advances once per slot, as on a cluster.
   */
  const advanceTo = (slot: number) => {
    svm.expireBlockhash();
    setRuntimeClock(slot);
    clock.advance(slot, svm.latestBlockhash());
  };
  /** The Clock sysvar programs read (and getAccountInfo shows): the working slot and its time. */
  const setRuntimeClock = (slot: number) => {
    // The sysvars move (and what a slot's end writes): every account is read anew.
    lastRead.clear();
    const unix = BigInt(clock.timeOf(slot));
    const epoch = BigInt(slot) / SLOTS_PER_EPOCH;
    const epochStart = BigInt(clock.timeOf(Number(epoch * SLOTS_PER_EPOCH)));
    svm.setClock(new Clock(BigInt(slot), epochStart, epoch, epoch + 1n, unix));
  };
  // A fresh LiteSVM's Clock is its own default until the first slot passes: set it now.
  setRuntimeClock(clock.slot);
  const tick = () => {
    const due = clock.dueSlot();
    if (due > clock.slot) {
      advanceTo(due);
      pruneHistory();
      changed();
      events?.emit({ kind: "slot", slot: due });
    }
    return clock.slot;
  };

  const accounts = svmAccounts(svm);
  const transactions = svmTransactions(svm);
  const readAccount = (address: string): ChainAccount | undefined => {
    const known = lastRead.get(address);
    if (known !== undefined) return known ?? undefined;
    const account = accounts.account(address);
    const rentEpoch = account === undefined || rentEpochs.size === 0 ? undefined : rentEpochs.get(address);
    const read =
      account === undefined ? undefined : rentEpoch === undefined ? account : { ...account, rentEpoch };
    // A large account (a program's data, hundreds of kilobytes) is not kept: at most 4,096 small
    // ones are, a few megabytes.
    if (read !== undefined && read.data.length > CACHED_ACCOUNT_BYTES) return read;
    if (lastRead.size >= ACCOUNTS_CACHED) lastRead.clear();
    lastRead.set(address, read ?? null);
    return read;
  };
  /** Decimals by mint: a mint's decimals never change, except through setAccount (which clears this). */
  const decimals = new Map<string, number>();
  const lookupTable = (address: Address) => {
    const account = readAccount(address);
    return account?.programAddress === LOOKUP_TABLE_PROGRAM ? (account.data as Uint8Array) : undefined;
  };

  /**
   * Lamports and token balances of every account a transaction names, as its meta records them.
   * Programs are read for their lamports only (their data is the program itself, often hundreds
   * of kilobytes), and accounts the transaction cannot write are read once: `before` is reused.
   */
  const balances = (
    wire: WireTransaction,
    before?: Balances,
    read: (address: string) => RawAccount | undefined = readAccount,
  ): Balances => {
    const lamports: bigint[] = [];
    const tokens: TokenBalanceJson[] = [];
    wire.accounts.forEach((key, accountIndex) => {
      if (before !== undefined && !wire.writable[accountIndex]) {
        lamports.push(before.lamports[accountIndex] ?? 0n);
        const token = before.tokens.find((t) => t.accountIndex === accountIndex);
        if (token !== undefined) tokens.push(token);
        return;
      }
      if (wire.programs.has(key)) {
        lamports.push(accounts.balance(key) ?? 0n);
        return;
      }
      const account = read(key);
      lamports.push(account?.lamports ?? 0n);
      const token = readTokenAccount(account);
      if (token === undefined || account === undefined) return;
      let places = decimals.get(token.mint);
      if (places === undefined) {
        places = readMint(readAccount(token.mint))?.decimals ?? 0;
        decimals.set(token.mint, places);
      }
      tokens.push({
        accountIndex,
        mint: token.mint,
        owner: token.owner,
        programId: account.programAddress,
        uiTokenAmount: uiTokenAmount(token.amount, places),
      });
    });
    tokens.sort((a, b) => a.accountIndex - b.accountIndex);
    return { lamports, tokens };
  };

  /**
   * Signers' public keys as node:crypto holds them, by address: the same few sign most
   * transactions (the service's executor signs every swap), and making one costs about as much as
   * a verification. Bounded: emptied when full.
   */
  const signerKeys = createBoundedMemo(
    SIGNER_KEYS_CACHED,
    (signer): KeyObject =>
      createPublicKey({
        key: Buffer.concat([
          ED25519_SPKI_PREFIX,
          base58AddressBytes(signer) ?? (addresses.encode(signer as Address) as Uint8Array),
        ]),
        format: "der",
        type: "spki",
      }),
  );
  const signerKey = (signer: string): KeyObject => signerKeys.get(signer);
  /**
   * The loaded size (data and 64 bytes of header) of the programs transactions call, by address:
   * a program's data is often hundreds of kilobytes, and reading it copies it out of LiteSVM for
   * each simulation. Forgotten where the chain writes an account (setAccount, a transaction's
   * writable keys); bounded: emptied when full.
   */
  const programSizes = createBoundedMemo(PROGRAM_SIZES_CACHED, (key) => {
    const account = readAccount(key);
    return account === undefined ? 0 : account.data.length + 64;
  });
  const programSize = (key: string): number => programSizes.get(key);

  const signaturesVerify = (wire: WireTransaction): boolean => {
    const message = wire.transaction.messageBytes as unknown as Uint8Array;
    return Object.entries(wire.transaction.signatures).every(([signer, signature]) => {
      if (signature === null) return false;
      return verify(null, message, signerKey(signer), signature as Uint8Array);
    });
  };

  /** Checks a cluster makes before running a transaction: a live blockhash, and not seen before. */
  const precheck = (wire: WireTransaction): TransactionError | null => {
    if (!clock.isValid(wire.blockhash) && !durableNonceOf(wire)) return transactionError("BlockhashNotFound");
    if (ledger.get(wire.signatures[0] as string) !== undefined) return transactionError("AlreadyProcessed");
    return null;
  };

  /**
   * Whether the transaction's lifetime is a durable nonce, as Agave checks it: its first
   * instruction advances a nonce account (System's AdvanceNonceAccount) whose stored nonce is the
   * transaction's blockhash. The runtime then advances it, so the same transaction cannot run twice.
   */
  const durableNonceOf = (wire: WireTransaction): boolean => {
    const first = wire.message.instructions[0];
    if (first === undefined || wire.accounts[first.programAddressIndex] !== SYSTEM_PROGRAM) return false;
    const data = first.data;
    if (
      data === undefined ||
      data.length !== 4 ||
      data[0] !== ADVANCE_NONCE_ACCOUNT ||
      data[1] ||
      data[2] ||
      data[3]
    ) {
      return false;
    }
    const nonce = first.accountIndices?.[0];
    const account = nonce === undefined ? undefined : readAccount(wire.accounts[nonce] as string);
    if (account?.programAddress !== SYSTEM_PROGRAM || account.data.length !== NONCE_ACCOUNT_SIZE)
      return false;
    const bytes = account.data as Uint8Array;
    // Versions (u32), State Initialized (u32 = 1), authority, then the durable nonce.
    if (bytes[4] !== 1) return false;
    return base58Text(bytes.subarray(40, 72)) === wire.blockhash;
  };

  /** A simulation that ended before the transaction ran (an unknown blockhash, a bad signature). */
  const unrun = (
    wire: WireTransaction,
    err: TransactionError,
    accounts: readonly string[],
    loaded: boolean,
  ): Simulation => {
    const pre = loaded ? balances(wire) : undefined;
    return {
      err,
      logs: [],
      unitsConsumed: 0n,
      returnData: null,
      innerInstructions: [],
      accountKeys: wire.accounts,
      accounts: accounts.map(() => undefined),
      fee: null,
      balances: pre === undefined ? null : { pre, post: pre },
      loadedAddresses: wire.loaded,
      loadedAccountsDataSize: 0,
    };
  };

  /**
   * What a run needs of the state before it: the balances, each account read once for both them
   * and the loaded size (state does not move meanwhile), and those accounts as they were.
   */
  const stateBefore = (wire: WireTransaction) => {
    const read = new Map<string, ChainAccount | undefined>();
    const readOnce = (key: string) => {
      if (!read.has(key)) read.set(key, readAccount(key));
      return read.get(key);
    };
    const pre = balances(wire, undefined, readOnce);
    const loadedAccountsDataSize = wire.accounts.reduce((sum, key) => {
      if (wire.programs.has(key)) return sum + programSize(key);
      const account = readOnce(key);
      return sum + (account === undefined ? 0 : account.data.length + 64);
    }, 0);
    return { pre, read, loadedAccountsDataSize };
  };

  /** A run that failed, as a simulation (and a refused preflight) answers it. */
  const failedRun = (
    wire: WireTransaction,
    result: FailedTransactionMetadata,
    before: ReturnType<typeof stateBefore>,
    accounts: readonly string[],
    withInner: boolean,
  ): Simulation => {
    const err = transactionErrorFrom(result.err());
    // Refused while its fee payer was checked (no such account, too few lamports): Agave's
    // simulation has no processed transaction then, so no fee and no loaded bytes to report.
    const unloaded = typeof err.json === "string" && FEE_PAYER_ERRORS.has(err.json);
    return {
      fee: unloaded ? null : wire.fee,
      loadedAddresses: wire.loaded,
      loadedAccountsDataSize: unloaded ? 0 : before.loadedAccountsDataSize,
      accountKeys: wire.accounts,
      err,
      ...metaFields(result.meta(), withInner),
      accounts: accounts.map(() => undefined),
      balances: { pre: before.pre, post: before.pre },
    };
  };

  /** Runs `wire` on the current state without keeping what it wrote. */
  const simulateWire = (
    wire: WireTransaction,
    accounts: readonly string[],
    withInner: boolean,
  ): Simulation => {
    const checked = precheck(wire);
    if (checked !== null) return unrun(wire, checked, accounts, true);
    const before = stateBefore(wire);
    // Signatures are checked apart (sendTransaction always, simulateTransaction when asked), as a
    // validator does; LiteSVM's own check would refuse the unsigned transactions simulations get.
    const result = withoutSigverify(() => transactions.simulate(wire));
    if (result instanceof FailedTransactionMetadata) {
      return failedRun(wire, result, before, accounts, withInner);
    }
    const after = new Map<string, RawAccount>(result.postAccounts().map((a) => [a.address as string, a]));
    const afterOrNow = (address: string) => after.get(address) ?? readAccount(address);
    // A preflight refuses what would pass the bound on account data: so does its simulation.
    const exceeded = pastAccountBytes(wire, before.read, afterOrNow);
    if (exceeded !== undefined) return unrun(wire, exceeded, accounts, true);
    return {
      fee: wire.fee,
      loadedAddresses: wire.loaded,
      loadedAccountsDataSize: before.loadedAccountsDataSize,
      accountKeys: wire.accounts,
      err: null,
      ...metaFields(result.meta(), withInner),
      accounts: accounts.map(afterOrNow),
      balances: { pre: before.pre, post: balances(wire, undefined, afterOrNow) },
    };
  };
  /** LiteSVM's own signature check off for `run`: a simulation's are checked apart, when asked. */
  const withoutSigverify = <T>(run: () => T): T => {
    svm.withSigverify(false);
    try {
      return run();
    } finally {
      svm.withSigverify(true);
    }
  };

  /**
   * Runs `wire` and keeps what it wrote; LiteSVM checks its signatures. `preflight`: a failure is the preflight's refusal, answered as a
   * simulation would answer it, and undone. A preflight simulation is the very run on the very
   * same state (nothing runs between the two), so the transaction runs once, not twice: what a
   * failed run wrote (the fee it charged, a nonce it advanced) is put back as it was read before,
   * and a transaction that succeeds is exactly the one the simulation would have let through.
   * `received` is told once the transaction is past its preflight.
   */
  const execute = (
    wire: WireTransaction,
    bytes: Uint8Array,
    options: {
      readonly preflight?: boolean;
      readonly received?: () => void;
    } = {},
  ): Simulation | undefined => {
    const keys = wire.accounts;
    const slot = clock.slot;
    const before = stateBefore(wire);
    const pre = before.pre;
    const result = transactions.send(wire);
    // What it may have written is read anew from here on (the fee payer, whatever it ran).
    wire.accounts.forEach((key, i) => {
      if (wire.writable[i]) lastRead.delete(key);
    });
    if (result instanceof FailedTransactionMetadata && signatureRefused(result)) {
      // LiteSVM's own check refused it before it ran: nothing was charged or written, and it
      // never lands. A preflight answers it as a simulation with signature checks would.
      return options.preflight === true
        ? unrun(wire, transactionError("SignatureFailure"), [], false)
        : undefined;
    }
    if (options.preflight === true && result instanceof FailedTransactionMetadata) {
      undo(wire, before.read);
      return failedRun(wire, result, before, [], false);
    }
    const after = new Map<string, ChainAccount | undefined>();
    const readAfter = (address: string) => {
      if (!after.has(address)) after.set(address, readAccount(address));
      return after.get(address);
    };
    // Past the bound on account data: put back all it wrote, and it never lands (with or
    // without a preflight: it is the sender's answer either way, not a silent drop).
    const exceeded = pastAccountBytes(wire, before.read, readAfter);
    if (exceeded !== undefined) {
      undo(wire, before.read);
      return unrun(wire, exceeded, [], true);
    }
    accountBytes.add(dataGrowth(wire, before.read, readAfter));
    options.received?.();
    const post = balances(wire, pre, readAfter);
    const failed = result instanceof FailedTransactionMetadata;
    // A transaction that failed before it ran (its fee payer cannot pay, say) never lands: nothing
    // was charged, and a cluster would not have included it in a block either.
    if (failed && (post.lamports[0] ?? 0n) >= (pre.lamports[0] ?? 0n)) return undefined;
    wire.accounts.forEach((key, i) => {
      if (!wire.writable[i]) return;
      programSizes.forget(key);
      if (rentEpochs.delete(key)) {
        stale.add(key);
        // Read above with the rentEpoch the write has just cleared.
        lastRead.delete(key);
      }
      // Programs' balances are read without their data: those are read at the next save.
      if (!keepSavedAccounts || !after.has(key)) {
        stale.add(key);
        return;
      }
      const account = after.get(key);
      if (account === undefined) saved.delete(key);
      else {
        // Read before the write cleared its rentEpoch: saved as the runtime now holds it.
        const { rentEpoch: _written, ...written } = account;
        saved.set(key, savedAccountOf(written));
      }
      stale.delete(key);
    });
    const err = failed ? transactionErrorFrom(result.err()) : null;
    const meta = failed ? result.meta() : result;
    const fields = metaFields(meta);
    const entry = ledger.append({
      signature: wire.signatures[0] as string,
      slot,
      err: err?.json ?? null,
      memo: wire.memo,
      version: wire.version,
      wire: base64.decode(bytes),
      transactionJson: JSON.stringify(transactionJsonOf(wire)),
      metaJson: stringifyJsonBigInts({
        err: err?.json ?? null,
        status: err === null ? { Ok: null } : { Err: err.json },
        fee: wire.fee,
        preBalances: pre.lamports,
        postBalances: post.lamports,
        innerInstructions: fields.innerInstructions,
        logMessages: fields.logs,
        preTokenBalances: pre.tokens,
        postTokenBalances: post.tokens,
        rewards: [],
        loadedAddresses: wire.loaded,
        computeUnitsConsumed: fields.unitsConsumed,
        ...(fields.returnData === null
          ? {}
          : {
              returnData: {
                programId: fields.returnData.programId,
                data: [fields.returnData.data, "base64"],
              },
            }),
      }),
      accounts: keys,
    });
    pruneHistory();
    changed();
    events?.emit({
      kind: "transaction",
      entry,
      logs: fields.logs,
      written: keys.filter((_, i) => wire.writable[i]),
    });
    return undefined;
  };

  /** Bytes of account data a run adds (negative: frees): each account it could write, after less before. */
  const dataGrowth = (
    wire: WireTransaction,
    before: ReadonlyMap<string, ChainAccount | undefined>,
    after: (address: string) => RawAccount | undefined,
  ): number =>
    wire.accounts.reduce(
      (sum, key, i) =>
        !wire.writable[i] || wire.programs.has(key)
          ? sum
          : sum + accountDataBytes(after(key)) - accountDataBytes(before.get(key)),
      0,
    );
  /** The error of a run that would grow the account data past its bound; undefined when it fits. */
  const pastAccountBytes = (...run: Parameters<typeof dataGrowth>): TransactionError | undefined => {
    try {
      accountBytes.check(dataGrowth(...run));
      return undefined;
    } catch (error) {
      if (error instanceof AccountBytesExceededError) return error.transactionError();
      throw error;
    }
  };

  /**
   * Puts back what a failed run wrote: each account it could write, as `read` held it before.
   * (A failed run writes only its fee payer and a durable nonce; every writable account is
   * looked at, so nothing else can slip by.)
   */
  const undo = (wire: WireTransaction, read: ReadonlyMap<string, ChainAccount | undefined>) => {
    wire.accounts.forEach((key, i) => {
      if (!wire.writable[i] || wire.programs.has(key) || !read.has(key)) return;
      const was = read.get(key);
      const now = accounts.account(key);
      if (was === undefined) {
        if (now === undefined) return;
        // Made by the failed run: gone again (LiteSVM drops an account of no lamports).
        putAccount(key, {
          lamports: 0n,
          programAddress: SYSTEM_PROGRAM as Address,
          data: new Uint8Array(0),
          executable: false,
        });
        return;
      }
      if (
        now !== undefined &&
        now.lamports === was.lamports &&
        Buffer.from(now.data).equals(Buffer.from(was.data)) &&
        now.programAddress === was.programAddress
      )
        return;
      putAccount(key, was);
    });
  };
  /** An account into LiteSVM as it is given (no events, no saved-state bookkeeping: the callers' own). */
  const putAccount = (address: string, account: RawAccount) => {
    lastRead.delete(address);
    accounts.put(address, { ...account, data: account.data as Uint8Array });
  };

  const decode = (bytes: Uint8Array) => decodeWireTransaction(bytes, lookupTable);

  const chain: LocalChain = {
    tick,
    slot: (commitment) => clock.slotAt(commitment),
    latestBlockhash(commitment) {
      const { blockhash, slot } = clock.latestBlockhash(commitment);
      return { blockhash, lastValidBlockHeight: slot + 150 };
    },
    isBlockhashValid: (blockhash) => clock.isValid(blockhash),
    account: readAccount,
    programAccounts: (program) =>
      svm.getProgramAccounts(program as Address).map((account) => {
        const rentEpoch = rentEpochs.size === 0 ? undefined : rentEpochs.get(account.address);
        return {
          address: account.address,
          account: rentEpoch === undefined ? account : { ...account, rentEpoch },
        };
      }),
    setAccount(address, account) {
      const growth = accountDataBytes(account) - accountDataBytes(readAccount(address));
      accountBytes.check(growth);
      try {
        putAccount(address, account);
      } catch (error) {
        // LiteSVM loads an executable account as a program before keeping it, and refuses
        // ("Failed to set account: incorrect program id for instruction") what it cannot load.
        const reason = String((error as Error).message ?? error).replace(/^Failed to set account: /, "");
        throw new AccountRefusedError(reason, { cause: error });
      }
      accountBytes.add(growth);
      if (account.rentEpoch === undefined || account.rentEpoch === RENT_EXEMPT_EPOCH)
        rentEpochs.delete(address);
      else rentEpochs.set(address, account.rentEpoch);
      decimals.delete(address);
      programSizes.forget(address);
      stale.add(address);
      changed();
      events?.emit({ kind: "account", address, slot: clock.slot });
    },
    rentExemption: (size) => svm.minimumBalanceForRentExemption(BigInt(size)),

    send(bytes, { skipPreflight }) {
      const wire = decode(bytes);
      const signature = wire.signatures[0] as string;
      const received = () => events?.emit({ kind: "received", signature });
      const checked = precheck(wire);
      // A transaction that will run has its signatures checked by LiteSVM as it runs (natively:
      // about a third of what node:crypto's verify costs, the largest cost of a swap's send);
      // one that will not (a precheck refuses it, a signature is missing) has them checked here,
      // so that a bad signature is the refusal named, as before the run.
      const runs = checked === null && Object.values(wire.transaction.signatures).every((s) => s !== null);
      if (!skipPreflight) {
        const refusal = runs
          ? execute(wire, bytes, { preflight: true, received })
          : !signaturesVerify(wire)
            ? unrun(wire, transactionError("SignatureFailure"), [], false)
            : unrun(wire, checked as TransactionError, [], true);
        return refusal === undefined
          ? { kind: "sent", signature }
          : { kind: "preflight-failed", simulation: refusal };
      }
      // A cluster drops what it cannot run: a bad signature is not charged, so it does not land;
      // the caller learns it from getSignatureStatuses.
      if (checked === null) {
        received();
        // Past the bound on account data it is refused all the same (see execute).
        const refusal = runs ? execute(wire, bytes) : undefined;
        if (refusal !== undefined) return { kind: "preflight-failed", simulation: refusal };
      }
      return { kind: "sent", signature };
    },

    simulate(bytes, { sigVerify, replaceRecentBlockhash, accounts, innerInstructions = false }) {
      const wire = decode(bytes);
      if (sigVerify && !signaturesVerify(wire)) {
        return { simulation: unrun(wire, transactionError("SignatureFailure"), accounts, false) };
      }
      if (!replaceRecentBlockhash) return { simulation: simulateWire(wire, accounts, innerInstructions) };
      const latest = chain.latestBlockhash("processed");
      const replaced = withBlockhash(wire, latest.blockhash);
      return { simulation: simulateWire(replaced, accounts, innerInstructions), replacement: latest };
    },

    feeForMessage(messageBytes) {
      // A message is a transaction without signatures: give it room for them and decode it so.
      const count =
        messageBytes[0] === undefined
          ? 0
          : (messageBytes[0] & 0x80) !== 0
            ? messageBytes[1]
            : messageBytes[0];
      const withSignatures = new Uint8Array(1 + 64 * (count ?? 0) + messageBytes.length);
      withSignatures[0] = count ?? 0;
      withSignatures.set(messageBytes, 1 + 64 * (count ?? 0));
      const wire = decode(withSignatures);
      // A durable nonce's message has a fee too (Agave loads its nonce account for it).
      return clock.isValid(wire.blockhash) || durableNonceOf(wire) ? wire.fee : null;
    },

    status(signature) {
      const entry = ledger.get(signature);
      if (entry === undefined) return null;
      // Landed in the working slot: processed until the slot freezes and is confirmed.
      const depth = clock.slot - entry.slot;
      if (depth <= 0)
        return { slot: entry.slot, confirmations: 0, err: entry.err, confirmationStatus: "processed" };
      // Confirmed once frozen, finalized 32 slots later; confirmations count the frozen blocks on top.
      const finalized = depth > FINALIZATION_SLOTS;
      return {
        slot: entry.slot,
        confirmations: finalized ? null : depth - 1,
        err: entry.err,
        confirmationStatus: finalized ? "finalized" : "confirmed",
      };
    },

    transaction(signature, commitment) {
      const entry = ledger.get(signature);
      return entry !== undefined && entry.slot <= clock.slotAt(commitment) ? entry : undefined;
    },

    signaturesFor: (address, range, commitment) =>
      ledger.signaturesFor(address, { ...range, maxSlot: clock.slotAt(commitment) }),

    airdrop(address, lamports) {
      // The same airdrop twice with one blockhash would be the same transaction: an older
      // blockhash still valid makes it another, as a faucet given a recent blockhash would.
      for (const blockhash of clock.recentBlockhashes()) {
        if (!clock.isValid(blockhash)) continue;
        const bytes = faucetTransfer(address as Address, lamports, blockhash);
        const wire = decode(bytes);
        if (ledger.get(wire.signatures[0] as string) !== undefined) continue;
        execute(wire, bytes);
        return wire.signatures[0] as string;
      }
      throw new AirdropRefusedError("the same airdrop was already made with every valid blockhash");
    },

    timeOf: (slot) => clock.timeOf(slot),
    accountBytes,
    savedAccounts() {
      for (const address of stale) {
        const account = readAccount(address);
        if (account === undefined) saved.delete(address);
        else saved.set(address, savedAccountOf(account));
      }
      stale.clear();
      return [...saved];
    },
    ledger,
    clock,
    svm,
  };

  /** A signed legacy transaction: one System transfer from the faucet, with `blockhash`. */
  const faucetTransfer = (to: Address, lamports: bigint, blockhash: string): Uint8Array => {
    const data = new Uint8Array(12);
    const view = new DataView(data.buffer);
    view.setUint32(0, 2, true); // SystemInstruction::Transfer
    view.setBigUint64(4, lamports, true);
    const message = getCompiledTransactionMessageEncoder().encode({
      version: "legacy",
      header: { numSignerAccounts: 1, numReadonlySignerAccounts: 0, numReadonlyNonSignerAccounts: 1 },
      staticAccounts: [faucet.address, to, SYSTEM_PROGRAM],
      lifetimeToken: blockhash,
      instructions: [{ programAddressIndex: 2, accountIndices: [0, 1], data }],
    });
    return encodeTransaction.encode({
      messageBytes: message,
      signatures: { [faucet.address]: faucet.sign(message as Uint8Array) },
    } as unknown as Transaction) as Uint8Array;
  };

  /**
   * The parts of LiteSVM's metadata that JSON-RPC shows, in its forms. `withInner` false leaves the
   * inner instructions out: each is several calls into LiteSVM and a base58 text, and a simulation
   * that does not ask for them (every swap's trial) never shows them.
   */
  function metaFields(meta: TransactionMetadata, withInner = true) {
    const returned = meta.returnData();
    const returnData =
      returned.data().length === 0
        ? null
        : {
            programId: base58Text(returned.programId()),
            data: Buffer.from(returned.data()).toString("base64"),
          };
    const innerInstructions = (withInner ? meta.innerInstructions() : [])
      .map((list, index) => ({
        index,
        instructions: list.map((inner) => {
          const compiled = inner.instruction();
          return {
            programIdIndex: compiled.programIdIndex(),
            accounts: [...compiled.accounts()],
            data: base58Text(compiled.data()),
            stackHeight: inner.stackHeight(),
          };
        }),
      }))
      .filter((entry) => entry.instructions.length > 0);
    return { logs: meta.logs(), unitsConsumed: meta.computeUnitsConsumed(), returnData, innerInstructions };
  }

  return chain;
}

const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;
/** SystemInstruction::AdvanceNonceAccount, and a nonce account's size. */
const ADVANCE_NONCE_ACCOUNT = 4;
const NONCE_ACCOUNT_SIZE = 80;
/**
 * Errors of the fee payer's check (validate_transaction_fee_payer in Agave's SVM): the transaction
 * is not processed at all, so a simulation reports `fee` null and `loadedAccountsDataSize` 0.
 */
const FEE_PAYER_ERRORS = new Set(["AccountNotFound", "InsufficientFundsForFee", "InvalidAccountForFee"]);

/** An account as the state file holds it. */
export function savedAccountOf(account: ChainAccount): SavedAccount {
  return {
    lamports: account.lamports.toString(),
    owner: account.programAddress,
    executable: account.executable,
    data: Buffer.from(account.data as Uint8Array).toString("base64"),
    ...(account.rentEpoch === undefined ? {} : { rentEpoch: account.rentEpoch.toString() }),
  };
}

/**
 * A fresh LiteSVM (its programs: System, SPL Token, Token-2022, Associated Token Account and the
 * rest of its defaults) holding `accounts`, set up as the local chain runs it: no blockhash check
 * and no history of its own (the local chain does both), signatures checked.
 */
export function createSvm(accounts: readonly (readonly [string, SavedAccount])[] = []): LiteSVM {
  const svm = new LiteSVM().withTransactionHistory(0n).withBlockhashCheck(false).withSigverify(true);
  // The chain's epochs (what its Clock counts and getEpochSchedule answers): 432,000 slots from
  // slot 0, no warmup; LiteSVM's default schedule warms up, which programs reading it would see.
  svm.setEpochSchedule(new EpochSchedule(SLOTS_PER_EPOCH, SLOTS_PER_EPOCH, false, 0n, 0n));
  for (const [address, account] of accounts) {
    const data = Buffer.from(account.data, "base64");
    svm.setAccount({
      address: address as Address,
      lamports: BigInt(account.lamports) as never,
      programAddress: account.owner as Address,
      executable: account.executable,
      data,
      space: BigInt(data.length),
    });
  }
  return svm;
}
/** DER prefix of an Ed25519 public key in SPKI form; the 32 key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const SIGNER_KEYS_CACHED = 1_024;
const PROGRAM_SIZES_CACHED = 1_024;
const ACCOUNTS_CACHED = 4_096;
/** A lookup table's largest (256 keys) is 8,248 bytes; token accounts and mints are far smaller. */
const CACHED_ACCOUNT_BYTES = 10_240;

/** Whether LiteSVM refused a run at its signature check (the run itself never started). */
function signatureRefused(result: FailedTransactionMetadata): boolean {
  return transactionErrorFrom(result.err()).json === "SignatureFailure";
}
