import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  type compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  type Instruction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  type Transaction,
} from "@solana/kit";
import {
  getApproveCheckedInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { base58Text } from "./base58-address.ts";
import type { TokenProgram } from "./chain.ts";
import { compiledTransaction } from "./compiled-transaction.ts";
import type { SigningKey } from "./ed25519-key.ts";
import { associatedTokenAddress } from "./program-address.ts";
import { TOKEN_2022_PROGRAM_ADDRESS } from "./token-programs.ts";

/** A recent blockhash and the last block height a transaction made with it can land at. */
export interface Lifetime {
  readonly blockhash: string;
  readonly lastValidBlockHeight: bigint;
}

/** A token and the program that owns its mint. */
export interface TokenRef {
  readonly mint: string;
  readonly program: TokenProgram;
  readonly decimals: number;
}

/** SPL Memo (v2). */
export const MEMO_PROGRAM_ADDRESS = address("MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr");

/** The program that owns a token's mint: the one its instructions go to (transfers and swaps alike). */
export const PROGRAMS: Record<TokenProgram, Address> = {
  "spl-token": TOKEN_PROGRAM_ADDRESS,
  "spl-token-2022": TOKEN_2022_PROGRAM_ADDRESS,
};

/** The wallet's associated token account for the token (its address; it may not exist yet). */
export async function associatedTokenAccount(owner: string, token: TokenRef): Promise<string> {
  // Synchronous SHA-256 and base58 (see program-address.ts): kit's findAssociatedTokenPda, made
  // cheap enough for the new taker of every swap.
  return associatedTokenAddress(owner, token.mint, PROGRAMS[token.program]);
}

/** How a transaction builder finds a wallet's associated token account. */
export type AssociatedAccountOf = (owner: string, token: TokenRef) => Promise<string>;

/**
 * associatedTokenAccount, remembering up to `max` answers: a program-derived address costs an
 * on-curve check (BigInt arithmetic) and a SHA-256 per bump tried, and a keeper derives the same
 * sources and destinations at every slot.
 */
export function createAssociatedAccountCache(max = 10_000): AssociatedAccountOf {
  const known = new Map<string, Promise<string>>();
  return (owner, token) => {
    const key = `${owner}:${token.mint}:${token.program}`;
    let found = known.get(key);
    if (found === undefined) {
      found = associatedTokenAccount(owner, token);
      known.set(key, found);
      found.catch(() => known.delete(key));
      if (known.size > max) known.delete(known.keys().next().value as string);
    }
    return found;
  };
}

/**
 * The approval an owner signs: approveChecked on the owner's associated token account, naming
 * `delegate` with a cap of `amount` base units, fee paid by the owner. Unsigned: its one signature
 * is 64 zero bytes for the owner's wallet to fill. Base64, as wallets take transactions.
 *
 * `creates`: associated token accounts the agent's runs will pay into (a swap's output account, a
 * transfer's destination), created idempotently before the approval, their rent paid by the
 * owner's wallet. The executor pays no rent for the owner's side: an owner who could make it
 * create an account they then close would take its rent at every run.
 */
export async function approvalTransaction(options: {
  owner: string;
  delegate: string;
  token: TokenRef;
  amount: bigint;
  lifetime: Lifetime;
  creates?: readonly { readonly owner: string; readonly token: TokenRef }[];
}): Promise<{ transaction: string; tokenAccount: string; createdAccounts: readonly string[] }> {
  const { owner, delegate, token, amount, lifetime } = options;
  const tokenAccount = await associatedTokenAccount(owner, token);
  const signer = createNoopSigner(address(owner));
  const creates = options.creates ?? [];
  const createdAccounts = await Promise.all(creates.map((c) => associatedTokenAccount(c.owner, c.token)));
  const creations = creates.map((c, i) =>
    getCreateAssociatedTokenIdempotentInstruction({
      payer: signer,
      ata: address(createdAccounts[i] as string),
      owner: address(c.owner),
      mint: address(c.token.mint),
      tokenProgram: PROGRAMS[c.token.program],
    }),
  );
  const instruction = getApproveCheckedInstruction(
    {
      source: address(tokenAccount),
      mint: address(token.mint),
      delegate: address(delegate),
      owner: signer,
      amount,
      decimals: token.decimals,
    },
    { programAddress: PROGRAMS[token.program] },
  );
  const compiled = compile(signer, [...creations, instruction], lifetime);
  return { transaction: getBase64EncodedWireTransaction(compiled), tokenAccount, createdAccounts };
}

/**
 * A transfer with two signers: `authority`, the delegate the source's owner approved, signs
 * transferChecked; `feePayer` (the service's executor) pays the fee and, with `createDestination`,
 * the rent of the destination's token account (createAssociatedTokenIdempotent comes first). The
 * transaction's signature is the fee payer's.
 */
export async function delegatedTransferTransaction(options: {
  feePayer: SigningKey;
  authority: SigningKey;
  source: string;
  destination: string;
  token: TokenRef;
  amount: bigint;
  lifetime: Lifetime;
  /** Where associated token accounts come from (a cache, say); associatedTokenAccount by default. */
  accountOf?: AssociatedAccountOf;
  /** Creates the destination's associated token account first, the fee payer paying its rent. */
  createDestination?: boolean;
  /**
   * A memo naming the run (its agent and slot). It makes each slot's transaction its own: two
   * slots of one agent signed with the same blockhash would otherwise be the same bytes, the same
   * signature, and the second slot would be "already processed" or, worse, take the first one's
   * landing for its own.
   */
  memo: string;
}): Promise<{ transaction: string; signature: string; sourceAccount: string; destinationAccount: string }> {
  const { feePayer, authority, source, destination, token, amount, lifetime } = options;
  const accountOf = options.accountOf ?? associatedTokenAccount;
  const [sourceAccount, destinationAccount] = await Promise.all([
    accountOf(source, token),
    accountOf(destination, token),
  ]);
  const payer = createNoopSigner(feePayer.address);
  const delegate = createNoopSigner(authority.address);
  const program = PROGRAMS[token.program];
  const creation =
    options.createDestination === true
      ? [
          getCreateAssociatedTokenIdempotentInstruction({
            payer,
            ata: address(destinationAccount),
            owner: address(destination),
            mint: address(token.mint),
            tokenProgram: program,
          }),
        ]
      : [];
  const instructions = [
    ...creation,
    getTransferCheckedInstruction(
      {
        source: address(sourceAccount),
        mint: address(token.mint),
        destination: address(destinationAccount),
        authority: delegate,
        amount,
        decimals: token.decimals,
      },
      { programAddress: program },
    ),
    memoInstruction(options.memo),
  ];
  const { transaction, signature } = signCompiled(compile(payer, instructions, lifetime), feePayer, [
    feePayer,
    authority,
  ]);
  return { transaction, signature, sourceAccount, destinationAccount };
}

/** SPL Memo with no signer accounts: it only carries the text (a run's name, see above). */
export function memoInstruction(memo: string): Instruction {
  return { programAddress: MEMO_PROGRAM_ADDRESS, data: new TextEncoder().encode(memo) };
}

/**
 * The v0 message of `instructions` from `payer` on `lifetime`, not compiled: every transaction
 * the service builds starts here (a swap's then loads its route's lookup tables).
 */
export function transactionMessage(
  payer: ReturnType<typeof createNoopSigner>,
  instructions: readonly Instruction[],
  lifetime: Lifetime,
) {
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
        m,
      ),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

function compile(
  payer: ReturnType<typeof createNoopSigner>,
  instructions: readonly Instruction[],
  lifetime: Lifetime,
) {
  return compiledTransaction(transactionMessage(payer, instructions, lifetime));
}

/**
 * A compiled transaction signed by those of `keys` it requires, with the service's own keys (not
 * kit signers); a signer it requires besides them is left unsigned. Its signature is the fee
 * payer's. Transfers and swaps are signed alike: the executor pays, the owner's delegate signs.
 */
export function signCompiled(
  compiled: ReturnType<typeof compileTransaction>,
  feePayer: SigningKey,
  keys: readonly SigningKey[],
): { signed: Transaction; transaction: string; signature: string } {
  const message = compiled.messageBytes as unknown as Uint8Array;
  const signatures: Record<string, Uint8Array | null> = { ...compiled.signatures };
  for (const key of keys) {
    if (Object.hasOwn(signatures, key.address)) signatures[key.address] = key.sign(message);
  }
  const signed = { ...compiled, signatures } as unknown as Transaction;
  return {
    signed,
    transaction: getBase64EncodedWireTransaction(signed),
    signature: base58Text(signatures[feePayer.address] as Uint8Array),
  };
}
