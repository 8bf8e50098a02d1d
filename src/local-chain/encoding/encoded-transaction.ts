import { getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { parseJsonExactIntegers } from "../../chain/json-bigints.ts";
import { invalidParams } from "../rpc/json-rpc-error.ts";
import { invalidType } from "../rpc/rpc-params.ts";
import type { LedgerEntry } from "../runtime/ledger.ts";
import { parsedCompiledInstruction } from "./instruction-parser.ts";

/**
 * A landed transaction and its meta as getTransaction and getBlock show them, in each of
 * JSON-RPC's transaction encodings (Agave's EncodedTransactionWithStatusMeta).
 */

export type TransactionEncoding = "json" | "jsonParsed" | "base58" | "base64";

/** A compiled instruction as the json encoding and the stored meta hold it. */
export interface CompiledInstructionJson {
  readonly programIdIndex: number;
  readonly accounts: readonly number[];
  readonly data: string;
  readonly stackHeight: number | null;
}

interface TransactionJson {
  signatures: string[];
  message: {
    accountKeys: string[];
    header: {
      numRequiredSignatures: number;
      numReadonlySignedAccounts: number;
      numReadonlyUnsignedAccounts: number;
    };
    recentBlockhash: string;
    instructions: CompiledInstructionJson[];
    addressTableLookups?: unknown[];
  };
}

interface LoadedAddresses {
  readonly writable: readonly string[];
  readonly readonly: readonly string[];
}

export function transactionEncodingOf(config: Record<string, unknown>): TransactionEncoding {
  const value = config.encoding;
  if (value === undefined || value === null) return "json";
  if (value === "json" || value === "jsonParsed" || value === "base58" || value === "base64") return value;
  if (value === "binary") return "base58";
  if (typeof value === "string") {
    throw invalidParams(
      `unknown variant \`${value}\`, expected one of \`binary\`, \`base64\`, \`base58\`, \`json\`, \`jsonParsed\``,
    );
  }
  throw invalidType(value, "a transaction encoding");
}

/** Stored JSON text as a value again (u64 values beyond 2^53 stay exact). */
export function rawJson(text: string): unknown {
  return parseJsonExactIntegers(text);
}

const base58Bytes = (text: string) => getBase58Encoder().encode(text) as Uint8Array;

/** Compiled instructions in jsonParsed form, their indexes resolved against `keys`. */
export function parsedInstructions(
  instructions: readonly CompiledInstructionJson[],
  keys: readonly string[],
): Record<string, unknown>[] {
  return instructions.map((instruction) => parsedCompiledInstruction(instruction, keys, base58Bytes));
}

/** Inner instructions (Agave's `[{index, instructions}]`) in jsonParsed form. */
export function parsedInnerInstructions(
  inner: readonly { index: number; instructions: readonly CompiledInstructionJson[] }[],
  keys: readonly string[],
): { index: number; instructions: Record<string, unknown>[] }[] {
  return inner.map(({ index, instructions }) => ({
    index,
    instructions: parsedInstructions(instructions, keys),
  }));
}

/**
 * Account keys with their roles, as jsonParsed and transactionDetails "accounts" list them:
 * the static keys ("transaction"), then those loaded from lookup tables ("lookupTable").
 */
export function parsedAccountKeys(transaction: TransactionJson, loaded: LoadedAddresses | undefined) {
  const { accountKeys, header } = transaction.message;
  const signers = header.numRequiredSignatures;
  const keys: { pubkey: string; writable: boolean; signer: boolean; source: string }[] = accountKeys.map(
    (pubkey, i) => ({
      pubkey,
      writable:
        i < signers
          ? i < signers - header.numReadonlySignedAccounts
          : i < accountKeys.length - header.numReadonlyUnsignedAccounts,
      signer: i < signers,
      source: "transaction",
    }),
  );
  for (const pubkey of loaded?.writable ?? [])
    keys.push({ pubkey, writable: true, signer: false, source: "lookupTable" });
  for (const pubkey of loaded?.readonly ?? [])
    keys.push({ pubkey, writable: false, signer: false, source: "lookupTable" });
  return keys;
}

/** The transaction field of a landed transaction in `encoding`. */
export function encodedTransaction(entry: LedgerEntry, encoding: TransactionEncoding): unknown {
  switch (encoding) {
    case "json":
      return rawJson(entry.transactionJson);
    case "base64":
      return [entry.wire, "base64"];
    case "base58":
      return [getBase58Decoder().decode(Buffer.from(entry.wire, "base64")), "base58"];
    case "jsonParsed": {
      const json = JSON.parse(entry.transactionJson) as TransactionJson;
      const meta = JSON.parse(entry.metaJson) as { loadedAddresses?: LoadedAddresses };
      return {
        signatures: json.signatures,
        message: {
          accountKeys: parsedAccountKeys(json, meta.loadedAddresses),
          recentBlockhash: json.message.recentBlockhash,
          // Every key the instructions may name: static, then loaded (entry.accounts).
          instructions: parsedInstructions(json.message.instructions, entry.accounts),
          ...(json.message.addressTableLookups === undefined
            ? {}
            : { addressTableLookups: json.message.addressTableLookups }),
        },
      };
    }
  }
}

/**
 * The meta of a landed transaction in `encoding`: jsonParsed parses its inner instructions and
 * leaves out loadedAddresses (its account keys show them); without rewards, no `rewards` key.
 */
export function encodedMeta(
  entry: LedgerEntry,
  encoding: TransactionEncoding,
  options: { rewards: boolean } = { rewards: true },
): Record<string, unknown> {
  const meta = rawJson(entry.metaJson) as Record<string, unknown>;
  if (encoding === "jsonParsed") {
    delete meta.loadedAddresses;
    const inner = meta.innerInstructions as
      | { index: number; instructions: CompiledInstructionJson[] }[]
      | null
      | undefined;
    if (Array.isArray(inner)) meta.innerInstructions = parsedInnerInstructions(inner, entry.accounts);
  }
  if (!options.rewards) delete meta.rewards;
  return meta;
}

/** The transaction as transactionDetails "accounts" shows it: signatures and account keys only. */
export function accountsOnlyTransaction(entry: LedgerEntry): Record<string, unknown> {
  const json = JSON.parse(entry.transactionJson) as TransactionJson;
  const meta = JSON.parse(entry.metaJson) as { loadedAddresses?: LoadedAddresses };
  return { signatures: json.signatures, accountKeys: parsedAccountKeys(json, meta.loadedAddresses) };
}

/** The meta as transactionDetails "accounts" shows it (Agave's simple meta: no logs, no instructions). */
export function accountsOnlyMeta(entry: LedgerEntry, rewards: boolean): Record<string, unknown> {
  const meta = rawJson(entry.metaJson) as Record<string, unknown>;
  return {
    err: meta.err,
    status: meta.status,
    fee: meta.fee,
    preBalances: meta.preBalances,
    postBalances: meta.postBalances,
    preTokenBalances: meta.preTokenBalances,
    postTokenBalances: meta.postTokenBalances,
    ...(rewards ? { rewards: meta.rewards } : {}),
  };
}
