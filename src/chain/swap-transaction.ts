import {
  AccountRole,
  type Address,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createNoopSigner,
  getCompiledTransactionMessageDecoder,
  getTransactionEncoder,
  type Instruction,
} from "@solana/kit";
import {
  getCloseAccountInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
} from "@solana-program/token";
import type { SigningKey } from "./ed25519-key.ts";
import {
  type AssociatedAccountOf,
  associatedTokenAccount,
  type Lifetime,
  MEMO_PROGRAM_ADDRESS,
  memoInstruction,
  PROGRAMS,
  signCompiled,
  type TokenRef,
  transactionMessage,
} from "./token-transactions.ts";

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
 * unit price and the two account creations (see swapTransaction).
 */
export const OWN_TRANSFER_INDEX = 4;

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
 * 2-3. the owner's output account and the taker's input account, created idempotently (the fee
 *    payer pays their rent);
 * 4. transferChecked of `amount` from the owner's input account to the taker's, signed by the
 *    delegate under the owner's allowance: the only instruction the delegate's signature serves;
 * 5. the route, as vetted by the caller (see swap-route.ts): it names neither the fee payer nor
 *    the delegate, so their signatures serve none of it; it is signed by the taker, which holds
 *    nothing but this run's input;
 * 6. the taker's input account closed, its rent back to the fee payer (it must be empty then);
 * 7. a memo naming the run.
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
}): Promise<{
  transaction: string;
  signature: string;
  /** Bytes on the wire. */
  size: number;
  /** The addresses whose signatures the transaction requires. */
  signers: readonly string[];
  /** Every account the transaction may write, its lookup tables' included (as the tables were given). */
  writable: readonly string[];
}> {
  const { feePayer, delegate, taker, accounts } = plan;
  const payer = createNoopSigner(feePayer.address);
  const takerSigner = createNoopSigner(taker.address);
  const instructions: Instruction[] = [
    computeUnitLimitInstruction(plan.computeUnitLimit),
    computeUnitPriceInstruction(plan.computeUnitPrice),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: known(accounts.ownerOutput),
      owner: known(plan.owner),
      mint: known(plan.output.mint),
      tokenProgram: PROGRAMS[plan.output.program],
    }),
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
  const compiled = compileTransaction(message);
  const signers = Object.keys(compiled.signatures);
  // Only the three keys of the design ever sign; any other signer is left unsigned (and the
  // executor refuses such a route before it gets here).
  const { signed, transaction, signature } = signCompiled(compiled, feePayer, [feePayer, delegate, taker]);
  return {
    transaction,
    signature,
    size: getTransactionEncoder().encode(signed).length,
    signers,
    writable: writableOf(compiled.messageBytes as unknown as Uint8Array, plan.lookupTables),
  };
}

/** The writable accounts of a compiled message: its static ones, then those it loads from tables. */
function writableOf(
  messageBytes: Uint8Array,
  lookupTables: Readonly<Record<string, readonly string[]>>,
): string[] {
  const message = getCompiledTransactionMessageDecoder().decode(messageBytes);
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  const keys = message.staticAccounts;
  const out: string[] = [];
  keys.forEach((key, i) => {
    const writable =
      i < numSignerAccounts
        ? i < numSignerAccounts - numReadonlySignerAccounts
        : i < keys.length - numReadonlyNonSignerAccounts;
    if (writable) out.push(key);
  });
  const lookups = "addressTableLookups" in message ? (message.addressTableLookups ?? []) : [];
  for (const lookup of lookups) {
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
