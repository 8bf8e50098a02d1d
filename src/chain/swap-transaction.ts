import {
  AccountRole,
  address,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createNoopSigner,
  getTransactionEncoder,
  type Instruction,
} from "@solana/kit";
import {
  ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
} from "@solana-program/token";
import type { SigningKey } from "./ed25519-key.ts";
import {
  type AssociatedAccountOf,
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

/** The four token accounts a swap touches: the owner's, and the delegate's own. */
export interface SwapAccounts {
  readonly ownerInput: string;
  readonly ownerOutput: string;
  readonly delegateInput: string;
  readonly delegateOutput: string;
}

/** Solana's largest transaction on the wire (PACKET_DATA_SIZE). */
export const MAX_TRANSACTION_BYTES = 1232;
/** The most compute units a transaction may ask for. */
export const MAX_COMPUTE_UNITS = 1_400_000;
export const COMPUTE_BUDGET_PROGRAM = "ComputeBudget111111111111111111111111111111";
/** SPL Memo (v2): the run's name, which makes each slot's transaction its own (see token-transactions). */
export const MEMO_PROGRAM: string = MEMO_PROGRAM_ADDRESS;

export async function swapAccountsOf(
  owner: string,
  delegate: string,
  input: TokenRef,
  output: TokenRef,
  accountOf: AssociatedAccountOf,
): Promise<SwapAccounts> {
  const [ownerInput, ownerOutput, delegateInput, delegateOutput] = await Promise.all([
    accountOf(owner, input),
    accountOf(owner, output),
    accountOf(delegate, input),
    accountOf(delegate, output),
  ]);
  return { ownerInput, ownerOutput, delegateInput, delegateOutput };
}

/**
 * One swap as one v0 transaction, signed by the fee payer and the delegate only:
 * 1. compute budget: `computeUnitLimit`, and the route's unit price when it gives one;
 * 2. the owner's output account, created idempotently (the fee payer pays its rent), and the
 *    delegate's own input account, likewise;
 * 3. transferChecked of `amount` from the owner's input account into the delegate's, signed by the
 *    delegate under the owner's allowance;
 * 4. the route: its setup instructions (less the account creations step 2 already made), its swap,
 *    cleanup and other instructions, with the route's lookup tables;
 * 5. a memo naming the run.
 * If any instruction fails, none of it happened: the owner's tokens are never held across
 * transactions.
 */
export async function swapTransaction(plan: {
  readonly feePayer: SigningKey;
  readonly delegate: SigningKey;
  readonly owner: string;
  readonly input: TokenRef;
  readonly output: TokenRef;
  readonly amount: bigint;
  readonly accounts: SwapAccounts;
  readonly computeUnitLimit: number;
  readonly computeUnitPrice: bigint | undefined;
  readonly setup: readonly PlainInstruction[];
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
}> {
  const { feePayer, delegate, accounts } = plan;
  const payer = createNoopSigner(feePayer.address);
  const authority = createNoopSigner(delegate.address);
  const budget: Instruction[] = [computeUnitLimitInstruction(plan.computeUnitLimit)];
  if (plan.computeUnitPrice !== undefined) budget.push(computeUnitPriceInstruction(plan.computeUnitPrice));
  const created = new Set([accounts.ownerOutput, accounts.delegateInput]);
  const instructions: Instruction[] = [
    ...budget,
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: address(accounts.ownerOutput),
      owner: address(plan.owner),
      mint: address(plan.output.mint),
      tokenProgram: PROGRAMS[plan.output.program],
    }),
    getCreateAssociatedTokenIdempotentInstruction({
      payer,
      ata: address(accounts.delegateInput),
      owner: address(delegate.address),
      mint: address(plan.input.mint),
      tokenProgram: PROGRAMS[plan.input.program],
    }),
    getTransferCheckedInstruction(
      {
        source: address(accounts.ownerInput),
        mint: address(plan.input.mint),
        destination: address(accounts.delegateInput),
        authority,
        amount: plan.amount,
        decimals: plan.input.decimals,
      },
      { programAddress: PROGRAMS[plan.input.program] },
    ),
    ...plan.setup.filter((ix) => !createsOneOf(ix, created)).map(kitInstruction),
    ...plan.route.map(kitInstruction),
    memoInstruction(plan.memo),
  ];
  const tables = Object.fromEntries(
    Object.entries(plan.lookupTables).map(([table, addresses]) => [
      address(table),
      addresses.map((a) => address(a)),
    ]),
  );
  const message = compressTransactionMessageUsingAddressLookupTables(
    transactionMessage(payer, instructions, plan.lifetime),
    tables,
  );
  const compiled = compileTransaction(message);
  const signers = Object.keys(compiled.signatures);
  // Only the two keys of the design ever sign; any other signer is left unsigned (and the
  // executor refuses such a route before it gets here).
  const { signed, transaction, signature } = signCompiled(compiled, feePayer, [feePayer, delegate]);
  return {
    transaction,
    signature,
    size: getTransactionEncoder().encode(signed).length,
    signers,
  };
}

/**
 * True for an associated token account creation of an account in `created`: a no-op after the
 * transaction's own creation of it (Jupiter's setup creates the taker's accounts idempotently).
 */
function createsOneOf(ix: PlainInstruction, created: ReadonlySet<string>): boolean {
  if (ix.programAddress !== ASSOCIATED_TOKEN_PROGRAM_ADDRESS) return false;
  // Create (no data or 0) and CreateIdempotent (1); account 1 is the associated account.
  const kind = ix.data.length === 0 ? 0 : ix.data.length === 1 ? ix.data[0] : -1;
  return (kind === 0 || kind === 1) && created.has(ix.accounts[1]?.address ?? "");
}

function kitInstruction(ix: PlainInstruction): Instruction {
  return {
    programAddress: address(ix.programAddress),
    accounts: ix.accounts.map((a) => ({
      address: address(a.address),
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
  return { programAddress: address(COMPUTE_BUDGET_PROGRAM), data };
}

/** Compute Budget's SetComputeUnitPrice: discriminator 3, then micro-lamports as a u64. */
function computeUnitPriceInstruction(microLamports: bigint): Instruction {
  const data = new Uint8Array(9);
  data[0] = 3;
  new DataView(data.buffer).setBigUint64(1, microLamports, true);
  return { programAddress: address(COMPUTE_BUDGET_PROGRAM), data };
}
