import { JsonRpcError, SCAN_ERROR } from "./json-rpc-error.ts";

/** What is left of the bytes one answer may hold, charged as the answer is built. */
export interface AnswerBudget {
  /**
   * Counts `bytes` more of the answer; throws `answerTooLarge` once they pass what was left, or
   * `requestTooLong` once the request (or its batch) has run past its time.
   */
  charge(bytes: number): void;
}

/** The CPU time a request, or a whole batch, may take (LOCAL_SOLANA_MAX_REQUEST_MS). */
export interface TimeBudget {
  /** performance.now() past which the request stops. */
  readonly deadline: number;
  readonly maxRequestMs: number;
}

/**
 * A budget of `bytes` for one request's answer (in a batch, what the answers before it left of
 * `maxAnswerBytes`). Methods charge the bulk of an answer, account data, before encoding it, so
 * that 100 accounts of 10 MiB are refused before a gigabyte of base64 is ever held; the answer's
 * written size is checked against the same bound afterwards.
 */
export function createAnswerBudget(options: {
  bytes: number;
  maxAnswerBytes: number;
  /**
   * When the request must be done: the chain answers one request at a time on its thread, so a
   * scan charged account by account stops there instead of holding every other client.
   */
  time?: TimeBudget;
}): AnswerBudget {
  let left = options.bytes;
  const { time } = options;
  return {
    charge(bytes) {
      left -= bytes;
      if (left < 0) throw answerTooLarge(options.maxAnswerBytes);
      if (time !== undefined && performance.now() > time.deadline) throw requestTooLong(time.maxRequestMs);
    },
  };
}

/**
 * The refusal of a request (or the rest of a batch) past its time: the same -32012 as the byte
 * bound, so that clients back off alike, saying what to narrow.
 */
export function requestTooLong(maxRequestMs: number): JsonRpcError {
  return new JsonRpcError(
    SCAN_ERROR,
    `scan aborted: The request took longer than the limit: a request (a whole batch's included) may take at most ${maxRequestMs} ms (LOCAL_SOLANA_MAX_REQUEST_MS); ask for less: a memcmp filter on the mint (offset 0) or owner (offset 32), getTokenAccountsByOwner, a dataSlice, or fewer requests per batch`,
  );
}

/**
 * The refusal of an answer past the bound. Agave has no answer bound, but its nearest refusal is
 * the scan limit of getProgramAccounts (-32012, "scan aborted: The accumulated scan results
 * exceeded the limit"); clients that already back off from that one back off from this one too.
 * The rest of the message says what to ask for instead.
 */
export function answerTooLarge(maxAnswerBytes: number): JsonRpcError {
  return new JsonRpcError(
    SCAN_ERROR,
    `scan aborted: The accumulated scan results exceeded the limit: an answer (a whole batch's included) may hold at most ${maxAnswerBytes} bytes; ask for less: fewer accounts or requests per batch, a dataSlice, or base64+zstd`,
  );
}
