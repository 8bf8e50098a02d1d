import type { Approvals } from "../agent/approvals.ts";
import { UnavailableError } from "../domain/errors.ts";
import type { Chain, TransferChain } from "./chain.ts";
import type { DelegateKeys } from "./delegate-keys.ts";
import type { TokenRef } from "./token-transactions.ts";

/**
 * Approvals on the chain: the token's mint read (cached) for its program and decimals, a recent
 * blockhash, and SPL approveChecked naming the (owner, wallet) delegate, left for the wallet to
 * sign. Nothing here signs or sends: the wallet does both, and only the wallet can revoke.
 */
export function createChainApprovals(options: {
  chain: Chain;
  transfers: TransferChain;
  /** The executor's address: the fee payer of runs. */
  feePayer: string;
  delegates: DelegateKeys;
  /** True when runs move real tokens (TRANSFER_EXECUTOR=chain). */
  required: boolean;
  /** The mint of a catalog token symbol. */
  mintOf: (symbol: string) => string | undefined;
}): Approvals {
  const { chain, transfers, delegates } = options;
  return {
    feePayer: options.feePayer,
    required: options.required,
    delegateOf: (owner, wallet) => delegates.addressOf(owner, wallet),
    async prepare({ wallet, delegate, symbol, allowance, creates = [] }, signal) {
      const tokenOf = async (of: string): Promise<TokenRef> => {
        const mint = options.mintOf(of);
        const account = mint === undefined ? undefined : await chain.getMint(mint, signal);
        // CreateAgent checked the mint; one that is gone since is the chain's fault, not the caller's.
        if (mint === undefined || account === undefined) {
          throw new UnavailableError(`the mint of ${of} is not on the chain`);
        }
        return { mint, program: account.program, decimals: account.decimals };
      };
      const token = await tokenOf(symbol);
      const created = await Promise.all(
        creates.map(async (c) => ({ owner: c.owner, token: await tokenOf(c.symbol) })),
      );
      // Loaded on the first approval: the builders bring @solana/kit whole (17 MB in a process).
      const { approvalTransaction, associatedTokenAccount } = await import("./token-transactions.ts");
      const [lifetime, state] = await Promise.all([
        transfers.getLatestBlockhash(signal),
        transfers.getTokenAccount(await associatedTokenAccount(wallet, token), signal),
      ]);
      const { transaction, tokenAccount, createdAccounts } = await approvalTransaction({
        owner: wallet,
        delegate,
        token,
        amount: allowance,
        lifetime,
        creates: created,
      });
      return {
        transaction,
        owner: wallet,
        delegate,
        mint: token.mint,
        tokenAccount,
        allowance,
        decimals: token.decimals,
        lastValidBlockHeight: lifetime.lastValidBlockHeight,
        tokenAccountState: state === undefined ? "missing" : state.frozen ? "frozen" : "ready",
        createsAccounts: createdAccounts,
      };
    },
  };
}
