/**
 * The approval a transfer agent's owner signs so the service can move their tokens, and the
 * executor they approve. A port: the chain adapter (src/chain/chain-approvals.ts) builds the
 * transaction; the agent rules decide who may ask and for what.
 */

/** An unsigned approval transaction and the facts a wallet shows before it is signed. */
export interface ApprovalDraft {
  /** A version 0 transaction, base64, whose fee payer and only signer is `owner`; unsigned. */
  readonly transaction: string;
  readonly owner: string;
  readonly delegate: string;
  readonly mint: string;
  readonly tokenAccount: string;
  /** The cap, in base units. */
  readonly allowance: bigint;
  readonly decimals: number;
  /** The last block height at which the transaction can land. */
  readonly lastValidBlockHeight: bigint;
}

export interface Approvals {
  /** The executor's address: the delegate owners approve, and the fee payer of its transfers. */
  readonly executor: string;
  /**
   * The approval of `allowance` base units of the catalog token `symbol` for the executor, on
   * `owner`'s associated token account. Chain faults throw UnavailableError.
   */
  prepare(
    request: { owner: string; symbol: string; allowance: bigint },
    signal?: AbortSignal,
  ): Promise<ApprovalDraft>;
}
