import {
  type Address,
  type CompiledTransactionMessageWithLifetime,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type LegacyCompiledTransactionMessage,
  type Transaction,
  type V0CompiledTransactionMessage,
} from "@solana/kit";
import { base58Address, base58AddressBytes, base58Text } from "../../chain/base58-address.ts";
import { decodeTransactionBytes } from "./transaction-bytes.ts";

/** Solana's packet size: the largest serialized transaction a validator accepts (PACKET_DATA_SIZE). */
export const MAX_TRANSACTION_BYTES = 1232;
const LOOKUP_TABLE_META_SIZE = 56;
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const MEMO_PROGRAMS = new Set([
  "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
  "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo",
]);
/** Programs whose instructions verify signatures, each counted in the fee like a transaction's own. */
const PRECOMPILES = new Set([
  "Ed25519SigVerify111111111111111111111111111",
  "KeccakSecp256k11111111111111111111111111111",
  "Secp256r1SigVerify1111111111111111111111111",
]);
export const LAMPORTS_PER_SIGNATURE = 5000n;
const DEFAULT_INSTRUCTION_COMPUTE_UNITS = 200_000;
const MAX_COMPUTE_UNITS = 1_400_000;

/** The message versions the local chain runs. */
export type RunnableMessage = (LegacyCompiledTransactionMessage | V0CompiledTransactionMessage) &
  CompiledTransactionMessageWithLifetime;

/** A transaction from the wire, with what the local chain needs to know of it before running it. */
export interface WireTransaction {
  /** The bytes as sent: what kit's transaction encoder gives back for `transaction`. */
  readonly bytes: Uint8Array;
  readonly transaction: Transaction;
  readonly message: RunnableMessage;
  readonly version: "legacy" | 0;
  /** Base58, in the order of the message's signers; a missing one is 64 zero bytes ("1111…"). */
  readonly signatures: readonly string[];
  readonly blockhash: string;
  /** Static keys, then the writable and the readonly keys loaded from lookup tables. */
  readonly accounts: readonly Address[];
  readonly loaded: { readonly writable: readonly Address[]; readonly readonly: readonly Address[] };
  /** Per account of `accounts`: whether the message lets the transaction write it. */
  readonly writable: readonly boolean[];
  /** The programs the top-level instructions call. */
  readonly programs: ReadonlySet<Address>;
  /** Lamports: 5000 per signature (precompile signatures included) plus the priority fee. */
  readonly fee: bigint;
  /** The Memo instructions' text as getSignaturesForAddress shows it ("[5] hello"), or null. */
  readonly memo: string | null;
}

export class WireTransactionError extends Error {
  override readonly name: string = "WireTransactionError";
}

/**
 * A transaction that decodes but that Agave's sanitize refuses. Its message is the transaction
 * error's text (sendTransaction and simulateTransaction answer "invalid transaction: …"); the
 * message's own sanitize error says less (getFeeForMessage: "invalid transaction message: …").
 */
export class TransactionSanitizeError extends WireTransactionError {
  override readonly name = "TransactionSanitizeError";
  readonly messageError: string;
  constructor(message: string, messageError: string) {
    super(message);
    this.messageError = messageError;
  }
}

/**
 * Decodes a transaction as sent, by hand where its form is plain (transaction-bytes.ts) and else
 * with @solana/kit's codecs, and resolves its address lookup tables
 * through `lookupTable` (the table account's data). Throws WireTransactionError for bytes that are
 * not a transaction this chain can run (too long, malformed, an unsupported version, a lookup
 * table that is missing or an index past its end).
 */
export function decodeWireTransaction(
  bytes: Uint8Array,
  lookupTable: (address: Address) => Uint8Array | undefined,
): WireTransaction {
  if (bytes.length > MAX_TRANSACTION_BYTES) {
    throw new WireTransactionError(
      `transaction too large: ${bytes.length} bytes (max: ${MAX_TRANSACTION_BYTES})`,
    );
  }
  const { transaction, message } = decodeTransactionBytes(bytes) ?? decodeWithKit(bytes);
  // Agave's sanitize: a message needs a writable signer first, its fee payer. Without one there is
  // no signature to name the transaction by, and LiteSVM would run it all the same.
  const { header } = message;
  if (header.numSignerAccounts === 0 || header.numReadonlySignerAccounts >= header.numSignerAccounts) {
    throw new TransactionSanitizeError(
      "Transaction failed to sanitize accounts offsets correctly",
      "index out of bounds",
    );
  }
  const signatures = Object.values(transaction.signatures).map((s) => base58Text(s ?? ZERO_SIGNATURE));
  const loaded = { writable: [] as Address[], readonly: [] as Address[] };
  for (const lookup of (message.version === 0 ? message.addressTableLookups : undefined) ?? []) {
    const data = lookupTable(lookup.lookupTableAddress);
    if (data === undefined) throw new WireTransactionError("an address lookup table is missing");
    const at = (index: number): Address => {
      const offset = LOOKUP_TABLE_META_SIZE + index * 32;
      if (offset + 32 > data.length)
        throw new WireTransactionError("an address table lookup index is invalid");
      return base58Address(data.subarray(offset, offset + 32)) as Address;
    };
    for (const index of lookup.writableIndexes) loaded.writable.push(at(index));
    for (const index of lookup.readonlyIndexes) loaded.readonly.push(at(index));
  }
  const accounts = [...message.staticAccounts, ...loaded.writable, ...loaded.readonly];
  const { numSignerAccounts, numReadonlySignerAccounts, numReadonlyNonSignerAccounts } = message.header;
  const statics = message.staticAccounts.length;
  const writable = accounts.map((_, i) =>
    i < numSignerAccounts
      ? i < numSignerAccounts - numReadonlySignerAccounts
      : i < statics
        ? i < statics - numReadonlyNonSignerAccounts
        : i < statics + loaded.writable.length,
  );
  const programs = new Set(
    message.instructions.map((instruction) => accounts[instruction.programAddressIndex] as Address),
  );
  return {
    bytes,
    writable,
    programs,
    transaction,
    message,
    version: message.version,
    signatures,
    blockhash: message.lifetimeToken,
    accounts,
    loaded,
    fee: feeOf(message, accounts),
    memo: memoOf(message, accounts),
  };
}

const ZERO_SIGNATURE = new Uint8Array(64);

/** Kit's decoding, for the forms decodeTransactionBytes leaves to it: its refusals are the chain's. */
function decodeWithKit(bytes: Uint8Array): { transaction: Transaction; message: RunnableMessage } {
  let transaction: Transaction;
  let decoded: ReturnType<ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]>;
  try {
    transaction = getTransactionDecoder().decode(bytes);
    decoded = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  } catch (error) {
    throw new WireTransactionError("failed to deserialize the transaction", { cause: error });
  }
  if (decoded.version !== "legacy" && decoded.version !== 0) {
    throw new WireTransactionError(`unsupported transaction version ${decoded.version}`);
  }
  return { transaction, message: decoded as RunnableMessage };
}

/**
 * The fee Solana charges: 5000 lamports per signature, precompile signatures included, plus
 * compute unit price × compute unit limit (in micro-lamports, rounded up). Without a limit
 * instruction the limit is 200,000 units per instruction other than compute budget ones.
 */
function feeOf(message: RunnableMessage, accounts: readonly Address[]): bigint {
  let signatures = BigInt(message.header.numSignerAccounts);
  let price = 0n;
  let limit: number | undefined;
  let counted = 0;
  for (const instruction of message.instructions) {
    const program = accounts[instruction.programAddressIndex];
    const data = instruction.data ?? new Uint8Array();
    if (program !== undefined && PRECOMPILES.has(program)) signatures += BigInt(data[0] ?? 0);
    if (program === COMPUTE_BUDGET) {
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      if (data[0] === 2 && data.length >= 5) limit = view.getUint32(1, true);
      if (data[0] === 3 && data.length >= 9) price = view.getBigUint64(1, true);
    } else {
      counted++;
    }
  }
  const units = BigInt(Math.min(limit ?? counted * DEFAULT_INSTRUCTION_COMPUTE_UNITS, MAX_COMPUTE_UNITS));
  const priority = (price * units + 999_999n) / 1_000_000n;
  return signatures * LAMPORTS_PER_SIGNATURE + priority;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

function memoOf(message: RunnableMessage, accounts: readonly Address[]): string | null {
  const memos: string[] = [];
  for (const instruction of message.instructions) {
    const program = accounts[instruction.programAddressIndex];
    if (program === undefined || !MEMO_PROGRAMS.has(program)) continue;
    // Agave's form: the byte length, then the text ("(unparseable)" for bytes that are not UTF-8).
    const data = instruction.data ?? new Uint8Array();
    let text: string;
    try {
      text = UTF8.decode(data as Uint8Array);
    } catch {
      text = "(unparseable)";
    }
    memos.push(`[${data.length}] ${text}`);
  }
  return memos.length === 0 ? null : memos.join("; ");
}

/** How many accounts a transaction names (static keys and lookup-table entries), or 0 if it does not decode. */
export function accountCountOf(bytes: Uint8Array): number {
  try {
    const message =
      decodeTransactionBytes(bytes)?.message ??
      (getCompiledTransactionMessageDecoder().decode(
        getTransactionDecoder().decode(bytes).messageBytes,
      ) as RunnableMessage);
    const lookups = message.version === 0 ? (message.addressTableLookups ?? []) : [];
    return lookups.reduce(
      (n, l) => n + l.writableIndexes.length + l.readonlyIndexes.length,
      message.staticAccounts.length,
    );
  } catch {
    return 0;
  }
}

const EMPTY = new Uint8Array();

/** The transaction in JSON-RPC's "json" encoding. */
export function transactionJsonOf(wire: WireTransaction) {
  const { message } = wire;
  return {
    signatures: wire.signatures,
    message: {
      accountKeys: message.staticAccounts,
      header: {
        numRequiredSignatures: message.header.numSignerAccounts,
        numReadonlySignedAccounts: message.header.numReadonlySignerAccounts,
        numReadonlyUnsignedAccounts: message.header.numReadonlyNonSignerAccounts,
      },
      recentBlockhash: message.lifetimeToken,
      instructions: message.instructions.map((instruction) => ({
        programIdIndex: instruction.programAddressIndex,
        accounts: instruction.accountIndices ?? [],
        data: base58Text(instruction.data ?? EMPTY),
        stackHeight: null,
      })),
      ...(message.version === 0
        ? {
            addressTableLookups: (message.addressTableLookups ?? []).map((lookup) => ({
              accountKey: lookup.lookupTableAddress,
              writableIndexes: lookup.writableIndexes,
              readonlyIndexes: lookup.readonlyIndexes,
            })),
          }
        : {}),
    },
  };
}

/**
 * The wire transaction with another recent blockhash: the 32 bytes after the message's keys,
 * written in a copy of its bytes (the message was just decoded, so its layout is known), and the
 * decoded parts kept: decoding it again read every key through base58 and every lookup table out
 * of LiteSVM a second time for each simulation that asks for the latest blockhash.
 */
export function withBlockhash(wire: WireTransaction, blockhash: string): WireTransaction {
  const hash = base58AddressBytes(blockhash);
  if (hash === undefined) throw new TypeError(`not a blockhash: ${blockhash}`);
  const { bytes } = wire;
  const messageBytes = wire.transaction.messageBytes as unknown as Uint8Array;
  const messageAt = bytes.length - messageBytes.length;
  const keys = wire.message.staticAccounts.length;
  // Legacy: header (3 bytes); v0: a version byte first. Then the keys' compact-u16 count.
  const countAt = messageAt + (wire.version === 0 ? 4 : 3);
  const countBytes = keys < 0x80 ? 1 : keys < 0x4000 ? 2 : 3;
  const at = countAt + countBytes + 32 * keys;
  const copy = new Uint8Array(bytes);
  copy.set(hash, at);
  // Only the lifetime differs: keys, lookups, fee and memo are the decoded transaction's own.
  return {
    ...wire,
    bytes: copy,
    blockhash,
    transaction: { ...wire.transaction, messageBytes: copy.subarray(messageAt) } as unknown as Transaction,
    message: { ...wire.message, lifetimeToken: blockhash },
  };
}
