import type { AgentRecord } from "../agent/agent-store.ts";
import { approvalNeeded, spendingOf } from "../agent/approvals.ts";
import type { Chain, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import { baseUnits } from "../domain/base-units.ts";
import { UnavailableError } from "../domain/errors.ts";
import { uiAmount } from "../token/token-transaction-from-chain.ts";
import type { ReadinessCheck } from "./scheduler.ts";

/**
 * What a pending agent waits for: its wallet's approval (a transfer's source, a swap's wallet, for
 * the token it spends) of the agent's own delegate (for its owner and that wallet), covering at
 * least one run. Until the chain shows it, the agent stays pending, so it never fails a first run
 * for an approval nobody has signed yet.
 */
export function createApprovalCheck(options: {
  chain: Chain;
  transfers: TransferChain;
  delegates: DelegateKeys;
  mintOf: (symbol: string) => string | undefined;
}): ReadinessCheck {
  const { chain, transfers, delegates } = options;
  return async (agent: AgentRecord) => {
    const { wallet: source, amount, token: symbol } = spendingOf(agent);
    const delegate = delegates.addressOf(agent.owner, source);
    const needed = approvalNeeded({ type: agent.type, config: agent.config, delegate });
    try {
      const mint = options.mintOf(symbol);
      const mintAccount = mint === undefined ? undefined : await chain.getMint(mint);
      // A token gone from the chain is the run's to report; the agent waits for nothing here.
      if (mint === undefined || mintAccount === undefined) return undefined;
      const token = { mint, program: mintAccount.program, decimals: mintAccount.decimals };
      const { associatedTokenAccount } = await import("../chain/token-transactions.ts");
      const state = await transfers.getTokenAccount(await associatedTokenAccount(source, token));
      if (state === undefined || state.delegate !== delegate) return needed;
      const units = baseUnits(amount, token.decimals);
      if (state.delegatedAmount < units) {
        return `${needed}; it approved ${uiAmount(state.delegatedAmount, token.decimals)} ${symbol}, less than one run`;
      }
      return undefined;
    } catch (error) {
      if (error instanceof UnavailableError) return needed;
      throw error;
    }
  };
}
