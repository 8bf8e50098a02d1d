import type { AgentRecord } from "../agent/agent-store.ts";
import { approvalNeeded } from "../agent/approvals.ts";
import type { Chain, TokenAccountState, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import { baseUnits } from "../domain/base-units.ts";
import { UnavailableError } from "../domain/errors.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import { uiAmount } from "../token/token-transaction-from-chain.ts";
import type { ReadinessCheck } from "./scheduler.ts";

/** The approval check, and the token account each agent's check reads (what a watch subscribes to). */
export type ApprovalCheck = ReadinessCheck & {
  accountOf(agent: AgentRecord): Promise<string | undefined>;
};

/** What a pending agent's check needs besides its token account, worked out once per agent. */
interface Watched {
  readonly needed: string;
  readonly delegate: string;
  readonly tokenAccount: string;
  readonly decimals: number;
  readonly units: bigint;
  readonly symbol: string;
}

/**
 * What a pending agent waits for: its wallet's approval (a transfer's source, a swap's wallet, for
 * the token it spends) of the agent's own delegate (for its owner and that wallet), covering at
 * least one run. Until the chain shows it, the agent stays pending, so it never fails a first run
 * for an approval nobody has signed yet.
 *
 * The token accounts of every agent asked about are read together, 100 a request
 * (getMultipleAccounts); each agent's delegate and token account address are derived once and
 * remembered (bounded), as a pending agent is checked every second in its first minute.
 */
export function createApprovalCheck(options: {
  /** What each kind spends, from which wallet. */
  kinds: AgentKinds;
  chain: Chain;
  transfers: TransferChain;
  delegates: DelegateKeys;
  mintOf: (symbol: string) => string | undefined;
}): ApprovalCheck {
  const { chain, transfers, delegates } = options;
  const known = new Map<string, Watched>();

  /** The agent's facts, or undefined when its token is gone from the chain (the run reports that). */
  async function watchedOf(agent: AgentRecord): Promise<Watched | undefined> {
    const cached = known.get(agent.agentId);
    if (cached !== undefined) return cached;
    const spending = options.kinds.spendingOf(agent);
    const { wallet: source, amount, token: symbol } = spending;
    const delegate = delegates.addressOf(agent.owner, source);
    const needed = approvalNeeded(spending, delegate);
    const mint = options.mintOf(symbol);
    const mintAccount = mint === undefined ? undefined : await chain.getMint(mint);
    if (mint === undefined || mintAccount === undefined) return undefined;
    const token = { mint, program: mintAccount.program, decimals: mintAccount.decimals };
    const { associatedTokenAccount } = await import("../chain/token-transactions.ts");
    const watched: Watched = {
      needed,
      delegate,
      tokenAccount: await associatedTokenAccount(source, token),
      decimals: token.decimals,
      units: baseUnits(amount, token.decimals),
      symbol,
    };
    if (known.size >= MAX_KNOWN) known.delete(known.keys().next().value as string);
    known.set(agent.agentId, watched);
    return watched;
  }

  const check: ReadinessCheck = async (agents) => {
    try {
      const watched = await Promise.all(agents.map(watchedOf));
      const reads = watched.filter((w): w is Watched => w !== undefined);
      const states = await transfers.getTokenAccounts(reads.map((w) => w.tokenAccount));
      const stateOf = new Map<Watched, TokenAccountState | undefined>(reads.map((w, i) => [w, states[i]]));
      return watched.map((w, i) => {
        // A token gone from the chain is the run's to report; the agent waits for nothing here.
        if (w === undefined) return undefined;
        const state = stateOf.get(w);
        if (state === undefined || state.delegate !== w.delegate) return w.needed;
        if (state.delegatedAmount < w.units) {
          return `${w.needed}; it approved ${uiAmount(state.delegatedAmount, w.decimals)} ${w.symbol}, less than one run`;
        }
        // Ready: activated now, so its facts are no longer needed here.
        known.delete((agents[i] as AgentRecord).agentId);
        return undefined;
      });
    } catch (error) {
      if (!(error instanceof UnavailableError)) throw error;
      // The chain cannot tell: every agent asked about still waits, for what it needs.
      return Promise.all(
        agents.map(async (agent) => {
          const spending = options.kinds.spendingOf(agent);
          return approvalNeeded(spending, delegates.addressOf(agent.owner, spending.wallet));
        }),
      );
    }
  };
  return Object.assign(check, {
    accountOf: async (agent: AgentRecord) => (await watchedOf(agent))?.tokenAccount,
  });
}

/** Agents whose facts are remembered; past it, the oldest are worked out again when next checked. */
const MAX_KNOWN = 200_000;
