/** PrepareApproval: the approval to sign, and what the owner's agents sharing it need of it. */
import { baseUnits } from "../domain/base-units.ts";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError } from "../domain/errors.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import type { DecimalsLookup } from "./agent-config.ts";
import { amountProblem } from "./agent-config.ts";
import { requireAgentId } from "./agent-input.ts";
import type { AgentStore } from "./agent-store.ts";
import type { ApprovalDraft, Approvals } from "./approvals.ts";
import type { Schedule } from "./schedule.ts";

/** The most runs of a schedule that fall in one UTC day. */
const RUNS_PER_DAY: Record<Schedule, bigint> = { hourly: 24n, daily: 1n, weekly: 1n, monthly: 1n };
/** Agents of one owner read to add up what shares an approval. */
const MAX_AGENTS_READ = 10_000;

/** An approval to sign, and what the owner's agents on that token account need of it. */
export interface ApprovalPlan extends ApprovalDraft {
  /**
   * The most the owner's active and pending agents (transfers and swaps) on this wallet and token
   * can spend in one day, base units: they share this delegate and its one allowance.
   */
  readonly neededPerDay: bigint;
  /** Those agents, this one included. */
  readonly sharedBy: number;
}

export interface AgentApprovalPlanOptions {
  readonly store: AgentStore;
  /** What each kind spends, and where its runs pay into. */
  readonly kinds: AgentKinds;
  /** Approvals for the executor, built on the chain. */
  readonly approvals: Approvals;
  /** Decimals of a catalog token: the allowance is a whole number of its smallest units. */
  readonly lookupDecimals?: DecimalsLookup;
}

/**
 * The unsigned approval of `allowance` (UI units of the agent's token) for the delegate of the
 * caller's (owner, agent's wallet) pair. The agent's owner only.
 */
export type PrepareApproval = (
  owner: string,
  agentId: string,
  allowance: number,
  signal?: AbortSignal,
) => Promise<ApprovalPlan>;

export function createPrepareApproval(options: AgentApprovalPlanOptions): PrepareApproval {
  const { store } = options;
  return async (owner, agentId, allowance, signal) => {
    requireAgentId(agentId);
    // Another owner's agent is as unknown as a missing one: only the owner learns it exists.
    const agent = await store.get(owner, agentId, signal === undefined ? {} : { signal });
    if (agent === undefined) throw new NotFoundError(`agent ${agentId} not found`);
    const { wallet, token: symbol } = options.kinds.spendingOf(agent);
    const decimals = await options.lookupDecimals?.(symbol);
    if (!Number.isFinite(allowance) || allowance <= 0) {
      throw InvalidArgumentError.field("allowance", "must be a finite number greater than 0");
    }
    const problem = decimals === undefined ? undefined : amountProblem(allowance, decimals, symbol);
    if (problem !== undefined || decimals === undefined) {
      throw InvalidArgumentError.field("allowance", problem ?? `cannot be checked: ${symbol} is unknown`);
    }
    const delegate = options.approvals.delegateOf(owner, wallet);
    const draft = await options.approvals.prepare(
      // The account the agent's runs pay into is the wallet's to create, and to pay for.
      {
        wallet,
        delegate,
        symbol,
        allowance: baseUnits(allowance, decimals),
        creates: [options.kinds.receivingOf(agent)],
      },
      signal,
    );
    // The wallet would sign and pay for a transaction the chain refuses: say why now instead.
    if (draft.tokenAccountState === "missing") {
      throw new FailedPreconditionError(
        `the wallet ${wallet} has no ${symbol} token account yet (its associated token account ${draft.tokenAccount}), so an approval cannot land: receive some ${symbol} there (or create that account) first, then ask again`,
      );
    }
    if (draft.tokenAccountState === "frozen") {
      throw new FailedPreconditionError(
        `the wallet ${wallet}'s ${symbol} token account ${draft.tokenAccount} is frozen, so an approval cannot land`,
      );
    }
    // Every agent of this owner on this wallet and token spends through the same delegate and
    // allowance (an SPL account has one delegate, and approving again replaces the amount).
    let neededPerDay = 0n;
    let sharedBy = 0;
    for (let offset = 0; offset < MAX_AGENTS_READ; offset += 100) {
      const page = await store.list(owner, {
        limit: 100,
        offset,
        ...(signal === undefined ? {} : { signal }),
      });
      for (const other of page.agents) {
        if (other.status !== "active" && other.status !== "pending") continue;
        // Every kind alike: one delegate per (owner, wallet), one allowance per token.
        const spends = options.kinds.spendingOf(other);
        if (spends.wallet !== wallet || spends.token !== symbol) continue;
        sharedBy++;
        const schedule = other.config.schedule as Schedule;
        neededPerDay += baseUnits(spends.amount, decimals) * (RUNS_PER_DAY[schedule] ?? 1n);
      }
      if (page.agents.length < 100) break;
    }
    return { ...draft, neededPerDay, sharedBy };
  };
}
