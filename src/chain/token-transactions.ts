import {
  type Address,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase58Decoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  type Transaction,
} from "@solana/kit";
import {
  findAssociatedTokenPda,
  getApproveCheckedInstruction,
  getCreateAssociatedTokenIdempotentInstruction,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import type { TokenProgram } from "./chain.ts";
import type { SigningKey } from "./ed25519-key.ts";
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

const PROGRAMS: Record<TokenProgram, Address> = {
  "spl-token": TOKEN_PROGRAM_ADDRESS,
  "spl-token-2022": TOKEN_2022_PROGRAM_ADDRESS,
};

/** The wallet's associated token account for the token (its address; it may not exist yet). */
export async function associatedTokenAccount(owner: string, token: TokenRef): Promise<string> {
  const [account] = await findAssociatedTokenPda({
    owner: address(owner),
    mint: address(token.mint),
    tokenProgram: PROGRAMS[token.program],
  });
  return account;
}

/**
 * The approval an owner signs: approveChecked on the owner's associated token account, naming
 * `delegate` with a cap of `amount` base units, fee paid by the owner. Unsigned: its one signature
 * is 64 zero bytes for the owner's wallet to fill. Base64, as wallets take transactions.
 */
export async function approvalTransaction(options: {
  owner: string;
  delegate: string;
  token: TokenRef;
  amount: bigint;
  lifetime: Lifetime;
}): Promise<{ transaction: string; tokenAccount: string }> {
  const { owner, delegate, token, amount, lifetime } = options;
  const tokenAccount = await associatedTokenAccount(owner, token);
  const signer = createNoopSigner(address(owner));
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
  const compiled = compile(signer, [instruction], lifetime);
  return { transaction: getBase64EncodedWireTransaction(compiled), tokenAccount };
}

/**
 * A transfer the executor signs as the source account's delegate and as fee payer:
 * createAssociatedTokenIdempotent for the destination (rent paid by the executor when it is
 * missing), then transferChecked of `amount` base units.
 */
export async function delegatedTransferTransaction(options: {
  executor: SigningKey;
  source: string;
  destination: string;
  token: TokenRef;
  amount: bigint;
  lifetime: Lifetime;
}): Promise<{ transaction: string; signature: string; sourceAccount: string; destinationAccount: string }> {
  const { executor, source, destination, token, amount, lifetime } = options;
  const [sourceAccount, destinationAccount] = await Promise.all([
    associatedTokenAccount(source, token),
    associatedTokenAccount(destination, token),
  ]);
  const signer = createNoopSigner(executor.address);
  const program = PROGRAMS[token.program];
  const instructions = [
    getCreateAssociatedTokenIdempotentInstruction({
      payer: signer,
      ata: address(destinationAccount),
      owner: address(destination),
      mint: address(token.mint),
      tokenProgram: program,
    }),
    getTransferCheckedInstruction(
      {
        source: address(sourceAccount),
        mint: address(token.mint),
        destination: address(destinationAccount),
        authority: signer,
        amount,
        decimals: token.decimals,
      },
      { programAddress: program },
    ),
  ];
  const compiled = compile(signer, instructions, lifetime);
  const signatureBytes = executor.sign(compiled.messageBytes as unknown as Uint8Array);
  const signed = { ...compiled, signatures: { ...compiled.signatures, [executor.address]: signatureBytes } };
  return {
    transaction: getBase64EncodedWireTransaction(signed as unknown as Transaction),
    signature: getBase58Decoder().decode(signatureBytes),
    sourceAccount,
    destinationAccount,
  };
}

function compile(
  payer: ReturnType<typeof createNoopSigner>,
  instructions: Instruction[],
  lifetime: Lifetime,
) {
  return compileTransaction(
    pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(payer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: lifetime.blockhash as Blockhash, lastValidBlockHeight: lifetime.lastValidBlockHeight },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
    ),
  );
}
