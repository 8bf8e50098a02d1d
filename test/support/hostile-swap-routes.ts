import { randomBytes } from "node:crypto";
import { type Address, createSolanaRpc, getAddressDecoder, getAddressEncoder } from "@solana/kit";
import { findAssociatedTokenPda } from "@solana-program/token";
import { meta, transferCheckedWire, wire } from "../../src/local-chain/index.ts";

/**
 * Hostile Swap API answers, as an attacker who controls them would write them (a compromised
 * upstream, a proxy on the path, a misconfigured JUPITER_SWAP_URL): each is a mutator of the
 * honest /build answer of test/support/jupiter-swap-server.ts (its `mutate` option), one per row
 * of issue 41's table. The attacker is the server's `stranger`.
 */

export interface WireMeta {
  pubkey: string;
  isSigner: boolean;
  isWritable: boolean;
}
export interface WireInstruction {
  programId: string;
  accounts: WireMeta[];
  data: string;
}
/** The parts of a /build answer the mutators change (the rest passes through). */
export interface BuildAnswer {
  [field: string]: unknown;
  outAmount: string;
  otherAmountThreshold: string;
  computeBudgetInstructions: WireInstruction[];
  setupInstructions: WireInstruction[];
  swapInstruction: WireInstruction;
  cleanupInstruction: WireInstruction | null;
  otherInstructions: WireInstruction[];
  addressesByLookupTableAddress: Record<string, string[]> | null;
}
export interface AnswerContext {
  /** The request: taker, payer, destinationTokenAccount, inputMint, outputMint, amount. */
  readonly query: URLSearchParams;
  /** The attacker's address. */
  readonly stranger: string;
  readonly rpcUrl: string;
  /**
   * The executor's address, which anyone can learn (GET /v1/executor): the service no longer
   * sends it to the Swap API (the taker is the payer too), so a hostile answer is told it here.
   */
  readonly executor?: string;
}
export type AnswerMutator = (answer: BuildAnswer, context: AnswerContext) => Promise<BuildAnswer>;

export const SYSTEM_PROGRAM = "11111111111111111111111111111111";
const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
/** The unit price of the table's row: 6e11 micro-lamports (21 SOL at a 35,000-unit limit). */
export const HOSTILE_UNIT_PRICE = 600_000_000_000n;

/** The rows of issue 41's table, by name. */
export const HOSTILE_ROUTES = {
  /** System transfer of 1 SOL from the payer (the executor) to the attacker. */
  "system-transfer-from-executor": async (answer, context) => {
    const { stranger } = context;
    const data = Buffer.alloc(12);
    data.writeUInt32LE(2, 0);
    data.writeBigUInt64LE(1_000_000_000n, 4);
    answer.otherInstructions.push(
      wire(SYSTEM_PROGRAM, [meta(executorOf(context), true, true), meta(stranger, false, true)], data),
    );
    return answer;
  },
  /**
   * transferChecked to the attacker out of every token account of the owner (the destination's
   * owner) that has a delegate, and out of every account that lists the taker as delegate, each
   * signed by its delegate: the owner's (owner, wallet) delegate signs the swap's own transfer, so a
   * route that names it would ride on that signature.
   */
  "drain-delegated-accounts": async (answer, context) => {
    const rpc = createSolanaRpc(context.rpcUrl);
    const owner = await ownerOf(context.rpcUrl, context.query.get("destinationTokenAccount") as string);
    const { value: owned } = await rpc
      .getTokenAccountsByOwner(
        owner as Address,
        { programId: TOKEN_PROGRAM as Address },
        { encoding: "jsonParsed" },
      )
      .send();
    const { value: byTaker } = await rpc
      .getTokenAccountsByDelegate(
        context.query.get("taker") as Address,
        { programId: TOKEN_PROGRAM as Address },
        { encoding: "jsonParsed" },
      )
      .send();
    for (const account of [...owned, ...byTaker]) {
      const info = parsedTokenOf(account);
      if (info.delegate === undefined) continue;
      answer.otherInstructions.push(
        await drain(context, account.pubkey, info.mint, info.decimals, info.delegatedAmount, info.delegate),
      );
    }
    return answer;
  },
  /** The same over every account that still approves the payer (the executor) from before per-owner delegates. */
  "drain-executor-approvals": async (answer, context) => {
    const rpc = createSolanaRpc(context.rpcUrl);
    const payer = executorOf(context);
    const { value } = await rpc
      .getTokenAccountsByDelegate(
        payer as Address,
        { programId: TOKEN_PROGRAM as Address },
        { encoding: "jsonParsed" },
      )
      .send();
    for (const account of value) {
      const info = parsedTokenOf(account);
      answer.otherInstructions.push(
        await drain(context, account.pubkey, info.mint, info.decimals, info.delegatedAmount, payer),
      );
    }
    return answer;
  },
  /** System assign of the payer (the executor) to the Token program: it could never pay a fee again. */
  "assign-executor": async (answer, context) => {
    const data = Buffer.alloc(36);
    data.writeUInt32LE(1, 0);
    Buffer.from(getAddressEncoder().encode(TOKEN_PROGRAM as Address)).copy(data, 4);
    answer.setupInstructions.push(wire(SYSTEM_PROGRAM, [meta(executorOf(context), true, true)], data));
    return answer;
  },
  /** A compute unit price of 6e11 micro-lamports. */
  "huge-unit-price": async (answer) => {
    const data = Buffer.alloc(9);
    data[0] = 3;
    data.writeBigUInt64LE(HOSTILE_UNIT_PRICE, 1);
    answer.computeBudgetInstructions = [wire(COMPUTE_BUDGET, [], data)];
    return answer;
  },
  /** CloseAccount of the taker's input account, its rent to the attacker. */
  "close-taker-input-to-attacker": async (answer, { query, stranger, rpcUrl }) => {
    const taker = query.get("taker") as string;
    const input = await ata(rpcUrl, taker, query.get("inputMint") as string);
    const program = await programOf(rpcUrl, query.get("inputMint") as string);
    answer.otherInstructions.push(
      wire(program, [meta(input, false, true), meta(stranger, false, true), meta(taker, true, false)], [9]),
    );
    return answer;
  },
  /** Six idempotent associated account creations for the attacker, paid by the payer (the executor). */
  "ata-creations-for-attacker": async (answer, context) => {
    const { stranger, rpcUrl } = context;
    for (let i = 0; i < 6; i++) {
      const mint = randomAddress();
      const [account] = await findAssociatedTokenPda({
        owner: stranger as Address,
        mint,
        tokenProgram: TOKEN_PROGRAM as Address,
      });
      void rpcUrl;
      answer.setupInstructions.push(
        wire(
          ASSOCIATED_TOKEN_PROGRAM,
          [
            meta(executorOf(context), true, true),
            meta(account, false, true),
            meta(stranger, false, false),
            meta(mint, false, false),
            meta(SYSTEM_PROGRAM, false, false),
            meta(TOKEN_PROGRAM, false, false),
          ],
          [1],
        ),
      );
    }
    return answer;
  },
  /** outAmount 1 and otherAmountThreshold 1: the owner's amount for next to nothing. */
  "out-amount-one": async (answer) => {
    answer.outAmount = "1";
    answer.otherAmountThreshold = "1";
    return answer;
  },
  /** The answer's accounts through a lookup table that is not on chain. */
  "missing-lookup-table": async (answer) => {
    const addresses = Object.values(answer.addressesByLookupTableAddress ?? {}).flat();
    answer.addressesByLookupTableAddress = { [randomAddress()]: addresses };
    return answer;
  },
} satisfies Record<string, AnswerMutator>;

export type HostileRoute = keyof typeof HOSTILE_ROUTES;

/** An honest answer that comes `ms` late: for pauses and deletes that land while a route is slow. */
export function slowAnswer(ms: number, onAsked?: () => void): AnswerMutator {
  return async (answer) => {
    onAsked?.();
    await new Promise((resolve) => setTimeout(resolve, ms));
    return answer;
  };
}

/** A `mutate` option whose mutator the test switches (undefined: honest answers). */
export function createAnswerSwitch(): {
  mutate: (answer: BuildAnswer, context: AnswerContext) => Promise<BuildAnswer>;
  use(mutator: AnswerMutator | undefined): void;
  /** The executor's address, which the mutators attack (the service does not send it). */
  target(executor: string): void;
} {
  let current: AnswerMutator | undefined;
  let executor: string | undefined;
  return {
    mutate: (answer, context) =>
      current === undefined
        ? Promise.resolve(answer)
        : current(answer, executor === undefined ? context : { ...context, executor }),
    use(mutator) {
      current = mutator;
    },
    target(address) {
      executor = address;
    },
  };
}

async function drain(
  context: AnswerContext,
  source: string,
  mint: string,
  decimals: number,
  amount: bigint,
  authority: string,
): Promise<WireInstruction> {
  const program = await programOf(context.rpcUrl, mint);
  // The attacker's own account (the test makes it beforehand, so that only the refusal stands
  // between the owner's tokens and it).
  const destination = await ata(context.rpcUrl, context.stranger, mint);
  return transferCheckedWire(program, source, mint, destination, authority, amount, decimals);
}

function parsedTokenOf(account: { account: { data: unknown } }): {
  mint: string;
  decimals: number;
  delegate: string | undefined;
  delegatedAmount: bigint;
} {
  const info = (
    account.account.data as {
      parsed: {
        info: {
          mint: string;
          tokenAmount: { decimals: number };
          delegate?: string;
          delegatedAmount?: { amount: string };
        };
      };
    }
  ).parsed.info;
  return {
    mint: info.mint,
    decimals: info.tokenAmount.decimals,
    delegate: info.delegate,
    delegatedAmount: BigInt(info.delegatedAmount?.amount ?? "0"),
  };
}

/** The executor, as the test told the switch (else the request's payer, as the service once sent it). */
const executorOf = (context: AnswerContext) => context.executor ?? (context.query.get("payer") as string);

async function ownerOf(rpcUrl: string, tokenAccount: string): Promise<string> {
  const { value } = await createSolanaRpc(rpcUrl)
    .getAccountInfo(tokenAccount as Address, { encoding: "base64" })
    .send();
  if (value === null) throw new Error(`no token account at ${tokenAccount}`);
  return getAddressDecoder().decode(Buffer.from(value.data[0], "base64").subarray(32, 64));
}

async function programOf(rpcUrl: string, mint: string): Promise<string> {
  const { value } = await createSolanaRpc(rpcUrl)
    .getAccountInfo(mint as Address, { encoding: "base64" })
    .send();
  return value?.owner ?? TOKEN_PROGRAM;
}

async function ata(rpcUrl: string, owner: string, mint: string): Promise<string> {
  const [found] = await findAssociatedTokenPda({
    owner: owner as Address,
    mint: mint as Address,
    tokenProgram: (await programOf(rpcUrl, mint)) as Address,
  });
  return found;
}

function randomAddress(): Address {
  return getAddressDecoder().decode(randomBytes(32));
}
