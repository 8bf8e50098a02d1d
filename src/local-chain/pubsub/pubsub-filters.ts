import { getBase58Encoder } from "@solana/kit";
import { invalidParam, invalidParams, paramError } from "../rpc/json-rpc-error.ts";
import { invalidType, usizeParam } from "../rpc/rpc-params.ts";

/** One of programSubscribe's filters, checked and decoded. */
export type AccountFilter =
  | { readonly kind: "dataSize"; readonly size: number }
  | { readonly kind: "memcmp"; readonly offset: number; readonly bytes: Uint8Array };

/** Agave's bound on filters per request (MAX_GET_PROGRAM_ACCOUNT_FILTERS). */
const MAX_FILTERS = 4;
/** Agave's bound on a memcmp's bytes (MAX_DATA_SIZE, 128 bytes; 175 chars of base58). */
const MAX_MEMCMP_BYTES = 128;
const MAX_BASE58_CHARS = 175;

/**
 * programSubscribe's `filters`, as Agave reads them (RpcFilterType): `{dataSize: n}` and
 * `{memcmp: {offset, bytes, encoding?}}` with bytes in base58 (the default) or base64, at most 4
 * filters and 128 bytes a memcmp. A filter the local chain cannot apply is refused rather than
 * ignored, so that a subscription never hears of accounts its filters would have kept out.
 */
export function accountFiltersOf(value: unknown): AccountFilter[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidType(value, "a sequence");
  if (value.length > MAX_FILTERS) throw paramError(`Too many filters provided; max ${MAX_FILTERS}`);
  return value.map((filter) => {
    if (typeof filter !== "object" || filter === null || Array.isArray(filter)) {
      throw invalidType(filter, "enum RpcFilterType");
    }
    const keys = Object.keys(filter);
    const [key] = keys;
    if (keys.length !== 1 || key === undefined)
      throw invalidParams("expected a single variant of RpcFilterType");
    const body = (filter as Record<string, unknown>)[key];
    if (key === "dataSize") return { kind: "dataSize", size: usizeParam(body) };
    if (key === "memcmp") return memcmpOf(body);
    if (key === "tokenAccountState")
      throw invalidParam("tokenAccountState filters are not served by the local chain");
    throw invalidParams(
      `unknown variant \`${key}\`, expected one of \`dataSize\`, \`memcmp\`, \`tokenAccountState\``,
    );
  });
}

function memcmpOf(body: unknown): AccountFilter {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw invalidType(body, "struct Memcmp");
  const { offset, bytes, encoding } = body as Record<string, unknown>;
  if (offset === undefined) throw invalidParams("missing field `offset`");
  if (bytes === undefined) throw invalidParams("missing field `bytes`");
  if (typeof bytes !== "string") throw invalidType(bytes, "a string");
  const at = usizeParam(offset);
  let decoded: Uint8Array;
  if (encoding === undefined || encoding === null || encoding === "base58") {
    if (bytes.length > MAX_BASE58_CHARS)
      throw invalidParam("encoded binary (base 58) data should be less than 129 bytes");
    try {
      decoded = getBase58Encoder().encode(bytes) as Uint8Array;
    } catch {
      throw invalidParam("invalid base58 in memcmp bytes");
    }
  } else if (encoding === "base64") {
    decoded = Buffer.from(bytes, "base64");
  } else if (typeof encoding === "string") {
    throw invalidParams(`unknown variant \`${encoding}\`, expected one of \`base58\`, \`base64\``);
  } else {
    throw invalidType(encoding, "a memcmp encoding");
  }
  if (decoded.length > MAX_MEMCMP_BYTES) throw invalidParam(`memcmp bytes longer than ${MAX_MEMCMP_BYTES}`);
  return { kind: "memcmp", offset: at, bytes: decoded };
}

/** Whether an account's data passes every filter. */
export function passesFilters(data: Uint8Array, filters: readonly AccountFilter[]): boolean {
  for (const filter of filters) {
    if (filter.kind === "dataSize") {
      if (data.length !== filter.size) return false;
      continue;
    }
    const { offset, bytes } = filter;
    if (offset + bytes.length > data.length) return false;
    for (let i = 0; i < bytes.length; i++) if (data[offset + i] !== bytes[i]) return false;
  }
  return true;
}
