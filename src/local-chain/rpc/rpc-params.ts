import { base58Bytes, isBase58Address } from "../../chain/base58-address.ts";
import type { Commitment } from "../runtime/block-clock.ts";
import {
  INVALID_PARAMS,
  invalidParam,
  invalidParams,
  JsonRpcError,
  MIN_CONTEXT_SLOT_NOT_REACHED,
  paramError,
} from "./json-rpc-error.ts";

/**
 * Reading Solana JSON-RPC params the way Agave does, with its error texts: a param of the wrong
 * JSON type is "Invalid params: invalid type: …" (serde's words), a string that is no public key is
 * "Invalid param: WrongSize" or "Invalid param: Invalid" (ParsePubkeyError's names), and so on.
 */

/** serde's name for a JSON value's type, as its "invalid type" errors write it. */
export function serdeType(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return `boolean \`${value}\``;
  if (typeof value === "bigint") return `integer \`${value}\``;
  if (typeof value === "number") {
    return Number.isInteger(value) ? `integer \`${value}\`` : `floating point \`${value}\``;
  }
  if (typeof value === "string") return `string "${value}"`;
  if (Array.isArray(value)) return "sequence";
  return "map";
}

export function invalidType(value: unknown, expected: string): JsonRpcError {
  return invalidParams(`invalid type: ${serdeType(value)}, expected ${expected}`);
}

/** The params a method requires at least, as jsonrpc-core's derive reports a short list. */
export function requireParams(params: readonly unknown[], count: number): void {
  if (params.length < count) {
    throw new JsonRpcError(INVALID_PARAMS, `\`params\` should have at least ${count} argument(s)`);
  }
}

export function stringParam(value: unknown): string {
  if (typeof value !== "string") throw invalidType(value, "a string");
  return value;
}

/**
 * The longest base58 text of 32 bytes (a public key, a hash) and of 64 (a signature), as
 * solana-sdk's `from_str` bounds them (MAX_BASE58_LEN, MAX_BASE58_SIGNATURE_LEN).
 */
const MAX_BASE58_32_BYTES = 44;
const MAX_BASE58_64_BYTES = 88;

/**
 * Refuses base58 text longer than `max` before anything decodes it: base58 decodes in time
 * quadratic in its length (a 100 KB blockhash once held the event loop for seconds), and
 * solana-sdk refuses it so too (WrongSize) before decoding. Agave's word comes first, then the
 * param and the rule.
 */
function refuseLongBase58(text: string, max: number, name: string, prefix: string): void {
  if (text.length > max) {
    throw new JsonRpcError(
      INVALID_PARAMS,
      `${prefix}WrongSize (${name}: at most ${max} base58 characters, got ${text.length})`,
    );
  }
}

/** A base58 public key, or Agave's ParsePubkeyError; `name` is the param's, for a refusal's words. */
export function pubkeyParam(value: unknown, name: string): string {
  const text = stringParam(value);
  refuseLongBase58(text, MAX_BASE58_32_BYTES, name, "Invalid param: ");
  if (isBase58Address(text)) return text;
  throw invalidParam(decodedLength(text) === "invalid" ? "Invalid" : "WrongSize");
}

/** A base58 signature, or Agave's ParseSignatureError. */
export function signatureParam(value: unknown, name: string): string {
  const text = stringParam(value);
  refuseLongBase58(text, MAX_BASE58_64_BYTES, name, "Invalid param: ");
  const length = decodedLength(text);
  if (length === 64) return text;
  throw invalidParam(length === "invalid" ? "Invalid" : "WrongSize");
}

/** A base58 hash, or Agave's ParseHashError, which isBlockhashValid reports without "Invalid param: ". */
export function blockhashParam(value: unknown): string {
  const text = stringParam(value);
  refuseLongBase58(text, MAX_BASE58_32_BYTES, "blockhash", "");
  const length = decodedLength(text);
  if (length === "invalid") throw new JsonRpcError(INVALID_PARAMS, "Invalid");
  if (length !== 32) throw new JsonRpcError(INVALID_PARAMS, "WrongSize");
  return text;
}

/** The byte length base58 text decodes to, or "invalid" when it is not base58. Bound its length first. */
function decodedLength(text: string): number | "invalid" {
  return base58Bytes(text)?.length ?? "invalid";
}

/**
 * A list param of at most `max` items (Agave's "Too many inputs provided"), counted before any is
 * read; each is read by `read`, with its index.
 */
export function listParam<T>(value: unknown, max: number, read: (item: unknown, index: number) => T): T[] {
  if (!Array.isArray(value)) throw invalidType(value, "a sequence");
  if (value.length > max) throw paramError(`Too many inputs provided; max ${max}`);
  return value.map(read);
}

/** An unsigned 64-bit integer param. */
export function u64Param(value: unknown, what = "u64"): bigint {
  if (typeof value === "bigint" && value >= 0n && value < 1n << 64n) return value;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw invalidType(value, what);
}

/**
 * A slot param: a u64, kept exact (the request body's integers past 2^53 arrive as bigints), so a
 * refusal names the slot asked for rather than a double near it.
 */
export function slotParam(value: unknown): bigint {
  return u64Param(value);
}

export function usizeParam(value: unknown): number {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value;
  throw invalidType(value, "usize");
}

/** The optional config object at `index`: undefined and null mean none. */
export function configParam(params: readonly unknown[], index: number): Record<string, unknown> {
  const value = params[index];
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw invalidType(value, "struct config");
  return value as Record<string, unknown>;
}

const COMMITMENTS: Record<string, Commitment> = {
  processed: "processed",
  confirmed: "confirmed",
  finalized: "finalized",
  // Deprecated names Agave still accepts.
  recent: "processed",
  single: "confirmed",
  singleGossip: "confirmed",
  root: "finalized",
  max: "finalized",
};

export function commitmentOf(
  config: Record<string, unknown>,
  fallback: Commitment = "finalized",
): Commitment {
  const value = config.commitment;
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "string") throw invalidType(value, "a commitment level");
  const found = Object.hasOwn(COMMITMENTS, value) ? COMMITMENTS[value] : undefined;
  if (found === undefined) {
    throw invalidParams(
      `unknown variant \`${value}\`, expected one of \`max\`, \`recent\`, \`root\`, \`single\`, \`singleGossip\`, \`processed\`, \`confirmed\`, \`finalized\``,
    );
  }
  return found;
}

/**
 * The slot an answer is read at (`commitment`, by default the config's), checked against the
 * config's minContextSlot.
 */
export function contextSlotOf(
  chain: { slot(commitment: Commitment): number },
  config: Record<string, unknown>,
  commitment: Commitment = commitmentOf(config),
): number {
  const slot = chain.slot(commitment);
  checkMinContextSlot(config, slot);
  return slot;
}

/** minContextSlot: the request waits for no node; a slot the chain has not reached is an error. */
export function checkMinContextSlot(config: Record<string, unknown>, contextSlot: number): void {
  const value = config.minContextSlot;
  if (value === undefined || value === null) return;
  const minimum = u64Param(value);
  if (minimum > BigInt(contextSlot)) {
    throw new JsonRpcError(MIN_CONTEXT_SLOT_NOT_REACHED, "Minimum context slot has not been reached", {
      contextSlot,
    });
  }
}

export function booleanOf(config: Record<string, unknown>, key: string, fallback: boolean): boolean {
  const value = config[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "boolean") throw invalidType(value, "a boolean");
  return value;
}

/** The `{context, value}` wrapper of answers that say which slot they were read at. */
export function withContext(slot: number, value: unknown) {
  return { context: { apiVersion: API_VERSION, slot }, value };
}

/** The Agave version the local chain answers as (getVersion's solana-core, context.apiVersion). */
export const API_VERSION = "3.1.8";
