/** A JSON-RPC error answer: code, message and optional data, as Agave's server writes them. */
export class JsonRpcError extends Error {
  override readonly name = "JsonRpcError";
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Solana's server errors (agave rpc-client-api's custom_error.rs). */
export const SEND_TRANSACTION_PREFLIGHT_FAILURE = -32002;
export const TRANSACTION_SIGNATURE_VERIFICATION_FAILURE = -32003;
export const MIN_CONTEXT_SLOT_NOT_REACHED = -32016;
/** A scan whose results passed the node's byte limit (JSON_RPC_SCAN_ERROR). */
export const SCAN_ERROR = -32012;
export const UNSUPPORTED_TRANSACTION_VERSION = -32015;

/** "Invalid params: …": a parameter of the wrong shape (serde's words after the colon). */
export function invalidParams(detail: string): JsonRpcError {
  return new JsonRpcError(INVALID_PARAMS, `Invalid params: ${detail}.`);
}

/** A method's own refusal of its params: -32602 with the message as it is ("Invalid limit; max 1000"). */
export function paramError(message: string): JsonRpcError {
  return new JsonRpcError(INVALID_PARAMS, message);
}

/** "Invalid param: …": a parameter of the right shape with a bad value. */
export function invalidParam(detail: string): JsonRpcError {
  return new JsonRpcError(INVALID_PARAMS, `Invalid param: ${detail}`);
}
