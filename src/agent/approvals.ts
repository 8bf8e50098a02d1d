/**
 * The approval an agent's wallet (a transfer's source, a swap's wallet) signs so the service can
 * move its tokens, and the delegate it approves. A port: the chain adapter
 * (src/chain/chain-approvals.ts) builds the transaction; the agent rules decide who may ask and for what.
 *
 * Delegates are per (owner, wallet): the owner is the agent's owner (the API key's owner), the
 * wallet the one the agent spends from. An SPL account's allowance belongs to its one delegate, so
 * a wallet that approved the delegate of one owner has approved nothing for any other owner's agents.
 */

/** An unsigned approval transaction and the facts a wallet shows before it is signed. */
export interface ApprovalDraft {
  /** A version 0 transaction, base64, whose fee payer and only signer is `owner`; unsigned. */
  readonly transaction: string;
  /** The wallet that signs: the one the agent spends from. */
  readonly owner: string;
  /** The delegate of the agent's (owner, wallet) pair. */
  readonly delegate: string;
  readonly mint: string;
  readonly tokenAccount: string;
  /** The cap, in base units. */
  readonly allowance: bigint;
  readonly decimals: number;
  /** The last block height at which the transaction can land. */
  readonly lastValidBlockHeight: bigint;
  /**
   * What the chain holds at `tokenAccount` now: an approval of a token account that does not
   * exist, or is frozen, cannot land, whoever signs it.
   */
  readonly tokenAccountState: "ready" | "missing" | "frozen";
  /**
   * The associated token accounts the transaction also creates when they are missing (idempotent),
   * the wallet paying their rent: where the agent's runs pay into (see receivingOf).
   */
  readonly createsAccounts: readonly string[];
}

export interface Approvals {
  /** The service's executor: the fee payer of every run, never a delegate. */
  readonly feePayer: string;
  /** True when runs move real tokens, so an agent waits for its approval. */
  readonly required: boolean;
  /** The delegate of `owner`'s agents spending from `wallet`. */
  delegateOf(owner: string, wallet: string): string;
  /**
   * The approval of `allowance` base units of the catalog token `symbol` for `delegate`, on
   * `wallet`'s associated token account. Chain faults throw UnavailableError.
   */
  prepare(
    request: {
      wallet: string;
      delegate: string;
      symbol: string;
      allowance: bigint;
      /** Associated token accounts to create first, paid by the wallet (see receivingOf). */
      creates?: readonly Receiving[];
    },
    signal?: AbortSignal,
  ): Promise<ApprovalDraft>;
}

/** What an agent spends under its wallet's approval: whose tokens, which, and how many per run. */
export interface Spending {
  /** The wallet whose token account approves the delegate (a transfer's source, a swap's wallet). */
  readonly wallet: string;
  /** The catalog symbol of the token spent (a transfer's token, a swap's input token). */
  readonly token: string;
  /** Whole tokens per run. */
  readonly amount: number;
}

/**
 * A wallet's associated token account for a catalog token, where an agent's runs pay into
 * (AgentKind.receiving). The wallet creates it in its approval, and pays its rent: a run never
 * creates an account for its own owner's side, or the owner could close it after each run and take
 * the executor's rent every time. A transfer's destination is a third party's as often as the
 * owner's own: created there once, and again by a run only within
 * TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY.
 */
export interface Receiving {
  readonly owner: string;
  /** The catalog symbol. */
  readonly symbol: string;
}

/** What an agent waits for until its wallet approves its delegate, in its owner's words. */
export function approvalNeeded({ wallet, amount, token }: Spending, delegate: string): string {
  return `an approval: the wallet ${wallet} must approve the delegate ${delegate} for at least ${String(amount)} ${token} (sign the transaction PrepareApproval gives)`;
}
