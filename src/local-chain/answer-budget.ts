import { JsonRpcError, SCAN_ERROR } from "./json-rpc-error.ts";

/** What is left of the bytes one answer may hold, charged as the answer is built. */
export interface AnswerBudget {
  /** Counts `bytes` more of the answer; throws `answerTooLarge` once they pass what was left. */
  charge(bytes: number): void;
}

/**
 * A budget of `bytes` for one request's answer (in a batch, what the answers before it left of
 * `maxAnswerBytes`). Methods charge the bulk of an answer, account data, before encoding it, so
 * that 100 accounts of 10 MiB are refused before a gigabyte of base64 is ever held; the answer's
 * written size is checked against the same bound afterwards.
 */
export function createAnswerBudget(options: { bytes: number; maxAnswerBytes: number }): AnswerBudget {
  let left = options.bytes;
  return {
    charge(bytes) {
      left -= bytes;
      if (left < 0) throw answerTooLarge(options.maxAnswerBytes);
    },
  };
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
