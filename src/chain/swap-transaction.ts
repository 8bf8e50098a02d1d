import {
  AccountRole,
  type Address,
  compressTransactionMessageUsingAddressLookupTables,
  createNoopSigner,
  type Instruction,
} from "@solana/kit";
import {
  getCloseAccountInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
} from "@solana-program/token";
import { base58AddressBytes, base58Text } from "./base58-address.ts";
import { compiledTransaction } from "./compiled-transaction.ts";
import type { SigningKey } from "./ed25519-key.ts";
import {
  type AssociatedAccountOf,
  associatedTokenAccount,
  type Lifetime,
  MEMO_PROGRAM_ADDRESS,
  memoInstruction,
  PROGRAMS,
  type TokenRef,
  transactionMessage,
} from "./token-transactions.ts";
import { parseV0Message, type V0Message } from "./v0-message.ts";

/** An instruction in plain values, as a route from upstream gives it (see SwapApi). */
export interface PlainInstruction {
  readonly programAddress: string;
  readonly accounts: readonly {
    readonly address: string;
    readonly signer: boolean;
    readonly writable: boolean;
  }[];
  readonly data: Uint8Array;
}

/** The token accounts a swap's own instructions name: the owner's two, and the run's taker's input. */
export interface SwapAccounts {
  readonly ownerInput: string;
  readonly ownerOutput: string;
  /** The taker's associated account for the input mint: created, filled and closed by the transaction. */
  readonly takerInput: string;
}

/**
 * An address this module is given already checked: the route's by the Swap API's parser (each
 * one `isAddress`), the lookup tables' decoded from the chain's bytes, the service's own derived.
 * Kit's `address()` would check each again by decoding its base58 into a BigInt, for every
 * account of both builds of every swap: a cost the profile showed, for nothing.
 */
const known = (value: string): Address => value as Address;

/** Solana's largest transaction on the wire (PACKET_DATA_SIZE). */
export const MAX_TRANSACTION_BYTES = 1232;
/** The most compute units a transaction may ask for. */
export const MAX_COMPUTE_UNITS = 1_400_000;
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
/** SPL Memo (v2): the run's name, which makes each slot's transaction its own (see token-transactions). */
export const MEMO_PROGRAM: string = MEMO_PROGRAM_ADDRESS;
/**
 * Index of the run's own transferChecked out of the owner's account: after the unit limit, the
 * unit price and the taker's account creation (see swapTransaction).
 */
export const OWN_TRANSFER_INDEX = 3;

export async function swapAccountsOf(
  owner: string,
  taker: string,
  input: TokenRef,
  output: TokenRef,
  accountOf: AssociatedAccountOf,
): Promise<SwapAccounts> {
  const [ownerInput, ownerOutput, takerInput] = await Promise.all([
    accountOf(owner, input),
    accountOf(owner, output),
    // Not through the cache: each run's taker is new, and would only push the owners' accounts out.
    associatedTokenAccount(taker, input),
  ]);
  return { ownerInput, ownerOutput, takerInput };
}

/**
 * The largest unit price (micro-lamports) that keeps price × `units` within `maxFeeLamports`.
 */
export function unitPriceCap(maxFeeLamports: bigint, units: number): bigint {
  return (maxFeeLamports * 1_000_000n) / BigInt(Math.max(1, units));
}

/**
 * One swap as one v0 transaction, signed by the fee payer, the owner's delegate and the run's
 * taker, each for its own part only:
 * 0-1. compute budget, set by the service: `computeUnitLimit`, and `computeUnitPrice` (the route's,
 *    clamped by the caller to the fee cap);
 * 2. the taker's input account, created idempotently (the fee payer lends its rent, and 6 gives it
 *    back);
 * 3. transferChecked of `amount` from the owner's input account to the taker's, signed by the
 *    delegate under the owner's allowance: the only instruction the delegate's signature serves;
 * 4. the route, as vetted by the caller (see swap-route.ts): it names neither the fee payer nor
 *    the delegate, so their signatures serve none of it; it is signed by the taker, which holds
 *    nothing but this run's input;
 * 5. the taker's input account closed, its rent back to the fee payer (it must be empty then);
 * 6. a memo naming the run.
 * The owner's output account is not created here: it must exist (the approval's transaction
 * creates it, at the wallet's cost). Were the executor to pay its rent, an owner could close it
 * after each run and take that rent every time.
 * If any instruction fails, none of it happened: the owner's tokens are never held across
 * transactions.
 */
export async function swapTransaction(plan: {
  readonly feePayer: SigningKey;
  readonly delegate: SigningKey;
  readonly taker: SigningKey;
  readonly owner: string;
  readonly input: TokenRef;
  readonly output: TokenRef;
  readonly amount: bigint;
  readonly accounts: SwapAccounts;
  readonly computeUnitLimit: number;
  readonly computeUnitPrice: bigint;
  readonly route: readonly PlainInstruction[];
  readonly lookupTables: Readonly<Record<string, readonly string[]>>;
  readonly lifetime: Lifetime;
  readonly memo: string;
  /**
   * False: a trial, left unsigned (zeros). Simulations check no signatures (and cannot with a
   * replaced blockhash); resignedSwap signs the transaction that is sent.
   */
  readonly sign?: boolean;
}): Promise<{
  transaction: string;
  signature: string;
  /** Bytes on the wire. */
  size: number;
  /** The addresses whose signatures the transaction requires. */
  signers: readonly string[];
  /** Every account the transaction may write, its lookup tables' included (as the tables were given). */
  writable: readonly string[];
  /** The compiled message, for resignedSwap. */
  compiled: CompiledSwap;
}> {
  const { feePayer, delegate, taker, accounts } = plan;
  const payer = createNoopSigner(feePayer.address);
  const takerSigner = createNoopSigner(taker.address);
  const instructions: Instruction[] = [
    computeUnitLimitInstruction(plan.computeUnitLimit),
    computeUnitPriceInstruction(plan.computeUnitPrice),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: known(accounts.takerInput),
      owner: known(taker.address),
      mint: known(plan.input.mint),
      tokenProgram: PROGRAMS[plan.input.program],
    }),
    getTransferCheckedInstruction(
      {
        source: known(accounts.ownerInput),
        mint: known(plan.input.mint),
        destination: known(accounts.takerInput),
        authority: createNoopSigner(delegate.address),
        amount: plan.amount,
        decimals: plan.input.decimals,
      },
      { programAddress: PROGRAMS[plan.input.program] },
    ),
    ...plan.route.map(kitInstruction),
    getCloseAccountInstruction(
      { account: known(accounts.takerInput), destination: known(feePayer.address), owner: takerSigner },
      { programAddress: PROGRAMS[plan.input.program] },
    ),
    memoInstruction(plan.memo),
  ];
  const tables = Object.fromEntries(
    Object.entries(plan.lookupTables).map(([table, addresses]) => [
      known(table),
      addresses.map((a) => known(a)),
    ]),
  );
  const message = compressTransactionMessageUsingAddressLookupTables(
    transactionMessage(payer, instructions, plan.lifetime),
    tables,
  );
  const compiled = compiledTransaction(message);
  const messageBytes = compiled.messageBytes as unknown as Uint8Array;
  const layout = parseV0Message(messageBytes);
  const signers = layout.staticAccounts.slice(0, layout.numSignerAccounts);
  const swap: CompiledSwap = { message: messageBytes, layout, signers };
  // Only the three keys of the design ever sign; any other signer is left unsigned (and the
  // executor refuses such a route before it gets here).
  const { transaction, signature } = signSwap(swap, plan.sign === false ? [] : [feePayer, delegate, taker]);
  return {
    transaction,
    signature,
    size: wireSize(swap),
    signers,
    writable: writableOf(layout, plan.lookupTables),
    compiled: swap,
  };
}

/** A swap's compiled message, kept so that its signed form need not be compiled again. */
export interface CompiledSwap {
  readonly message: Uint8Array;
  readonly layout: V0Message;
  /** The addresses whose signatures it requires, in the order the wire carries them. */
  readonly signers: readonly string[];
}

/**
 * The same compiled swap with a new compute budget and lifetime, signed: the three fields are of
 * fixed size (a u32, a u64 and 32 bytes), so they are written in place and nothing else of the
 * message changes. The transaction sent is thus byte for byte the one simulated, but for them.
 */
export function resignedSwap(
  swap: CompiledSwap,
  change: {
    readonly computeUnitLimit: number;
    readonly computeUnitPrice: bigint;
    readonly lifetime: Lifetime;
  },
  keys: readonly SigningKey[],
): { transaction: string; signature: string } {
  const { layout } = swap;
  const message = new Uint8Array(swap.message);
  const blockhash = base58AddressBytes(change.lifetime.blockhash);
  if (blockhash === undefined) throw new TypeError(`not a blockhash: ${change.lifetime.blockhash}`);
  message.set(blockhash, layout.blockhashAt);
  const view = new DataView(message.buffer, message.byteOffset, message.byteLength);
  const budget = (index: number, discriminator: number, length: number) => {
    const ix = layout.instructions[index];
    if (
      ix === undefined ||
      layout.staticAccounts[ix.programIdIndex] !== COMPUTE_BUDGET_PROGRAM ||
      ix.dataLength !== length ||
      message[ix.dataAt] !== discriminator
    ) {
      throw new Error(`instruction ${index} of the swap is not its compute budget's`);
    }
    return ix.dataAt + 1;
  };
  view.setUint32(budget(0, 2, 5), change.computeUnitLimit, true);
  view.setBigUint64(budget(1, 3, 9), change.computeUnitPrice, true);
  return signSwap({ ...swap, message }, keys);
}

/** The wire transaction of a compiled swap, signed by those of `keys` it requires (zeros for any other). */
function signSwap(
  swap: CompiledSwap,
  keys: readonly SigningKey[],
): { transaction: string; signature: string } {
  const { message, signers } = swap;
  const wire = new Uint8Array(wireSize(swap));
  // A compact-u16 below 128 is one byte; a v0 message has at most a few signers.
  wire[0] = signers.length;
  for (const [i, signer] of signers.entries()) {
    const key = keys.find((k) => k.address === signer);
    if (key !== undefined) wire.set(key.sign(message), 1 + 64 * i);
  }
  wire.set(message, 1 + 64 * signers.length);
  return {
    transaction: Buffer.from(wire.buffer, wire.byteOffset, wire.byteLength).toString("base64"),
    // The fee payer's signature (the first) names the transaction.
    signature: base58Text(wire.subarray(1, 65)),
  };
}

/** Bytes on the wire: the signatures' count, the signatures, the message. */
function wireSize(swap: CompiledSwap): number {
  if (swap.signers.length >= 128) throw new RangeError("too many signers");
  return 1 + 64 * swap.signers.length + swap.message.length;
}

/** The writable accounts of a compiled message: its static ones, then those it loads from tables. */
function writableOf(message: V0Message, lookupTables: Readonly<Record<string, readonly string[]>>): string[] {
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message;
  const keys = message.staticAccounts;
  const out: string[] = [];
  keys.forEach((key, i) => {
    const writable =
      i < numSignerAccounts
        ? i < numSignerAccounts - numReadonlySignerAccounts
        : i < keys.length - numReadonlyNonSignerAccounts;
    if (writable) out.push(key);
  });
  for (const lookup of message.addressTableLookups) {
    const table = lookupTables[lookup.lookupTableAddress] ?? [];
    for (const index of lookup.writableIndexes) {
      const at = table[index];
      if (at !== undefined) out.push(at);
    }
  }
  return out;
}

function kitInstruction(ix: PlainInstruction): Instruction {
  return {
    programAddress: known(ix.programAddress),
    accounts: ix.accounts.map((a) => ({
      address: known(a.address),
      role: a.signer
        ? a.writable
          ? AccountRole.WRITABLE_SIGNER
          : AccountRole.READONLY_SIGNER
        : a.writable
          ? AccountRole.WRITABLE
          : AccountRole.READONLY,
    })),
    data: ix.data,
  };
}

/** Compute Budget's SetComputeUnitLimit: discriminator 2, then a u32. */
function computeUnitLimitInstruction(units: number): Instruction {
  const data = new Uint8Array(5);
  data[0] = 2;
  new DataView(data.buffer).setUint32(1, units, true);
  return { programAddress: known(COMPUTE_BUDGET_PROGRAM), data };
}

/** Compute Budget's SetComputeUnitPrice: discriminator 3, then micro-lamports as a u64. */
function computeUnitPriceInstruction(microLamports: bigint): Instruction {
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, microLamports, true);
  return { programAddress: known(COMPUTE_BUDGET_PROGRAM), data };
}
