import type { ChainTransaction, TokenBalance } from "../chain/chain.ts";
import type { TokenTransaction } from "./token-source.ts";

/**
 * What one landed transaction did to one mint, as GetTokenTransactions shows it. Everything comes
 * from the token balances the transaction's meta records before and after it ran, so it holds for
 * any program that moved the tokens (SPL Token, Token-2022, a DEX, a bridge), not only for plain
 * transfer instructions:
 *
 * - Each owner's change is the sum over its token accounts of this mint (post minus pre; an account
 *   created by the transaction counts from 0, a closed one to 0). Owners are wallets, not token
 *   accounts; when the cluster did not record an owner, the token account stands in for it.
 * - `amount` is what changed hands, in UI units: the larger of the total increase and the total
 *   decrease (they are equal for transfers; a mint only increases, a burn only decreases).
 * - `sender` is the owner whose balance fell most, `recipient` the one whose balance rose most
 *   (ties: the smaller address). A transaction with several movements of the mint (one sender
 *   paying three wallets, say) is one entry: the total amount, the largest sender and recipient.
 * - `type`: `mint` when the mint's tokens only appeared, `burn` when they only vanished, `swap`
 *   when an owner whose balance of this mint changed had another mint move the other way in the
 *   same transaction, `transfer` otherwise, and `other` when the transaction named the mint but
 *   moved none of it (creating a token account, an approval).
 * - A failed transaction moved nothing (only its fee was paid): it is listed, so that the list
 *   follows the chain's history one for one and `before` cursors stay simple, as type `failed`
 *   with amount 0, the fee payer as sender and no recipient.
 */
export function tokenTransactionFromChain(tx: ChainTransaction, mint: string): TokenTransaction {
  const blockTime = tx.blockTime ?? 0;
  const base = { signature: tx.signature, blockTime };
  if (tx.failed) {
    return { ...base, amount: 0, sender: tx.accountKeys[0] ?? "", recipient: "", type: "failed" };
  }
  const changes = ownerChanges(tx, mint);
  let increase = 0n;
  let decrease = 0n;
  let sender: [string, bigint] | undefined;
  let recipient: [string, bigint] | undefined;
  for (const [owner, delta] of changes.deltas) {
    if (delta > 0n) {
      increase += delta;
      if (recipient === undefined || largerFirst([owner, delta], recipient)) recipient = [owner, delta];
    } else if (delta < 0n) {
      decrease -= delta;
      if (sender === undefined || largerFirst([owner, -delta], [sender[0], -sender[1]]))
        sender = [owner, delta];
    }
  }
  const moved = increase > decrease ? increase : decrease;
  const amount = uiAmount(moved, changes.decimals);
  const type =
    moved === 0n
      ? "other"
      : decrease === 0n
        ? "mint"
        : increase === 0n
          ? "burn"
          : isSwap(tx, mint, changes.deltas)
            ? "swap"
            : "transfer";
  return { ...base, amount, sender: sender?.[0] ?? "", recipient: recipient?.[0] ?? "", type };
}

/** Orders movements by size, larger first, then by address. */
function largerFirst(a: [string, bigint], b: [string, bigint]): boolean {
  return a[1] > b[1] || (a[1] === b[1] && a[0] < b[0]);
}

/** Each owner's change of one mint's balance, and the mint's decimals. */
function ownerChanges(tx: ChainTransaction, mint: string): { deltas: Map<string, bigint>; decimals: number } {
  const deltas = new Map<string, bigint>();
  let decimals = 0;
  const add = (balance: TokenBalance, sign: bigint) => {
    if (balance.mint !== mint) return;
    decimals = balance.decimals;
    const owner = balance.owner ?? tx.accountKeys[balance.accountIndex] ?? String(balance.accountIndex);
    deltas.set(owner, (deltas.get(owner) ?? 0n) + sign * balance.amount);
  };
  for (const balance of tx.preTokenBalances) add(balance, -1n);
  for (const balance of tx.postTokenBalances) add(balance, 1n);
  return { deltas, decimals };
}

/** True when an owner of this mint's movement saw another mint move the opposite way. */
function isSwap(tx: ChainTransaction, mint: string, deltas: ReadonlyMap<string, bigint>): boolean {
  const others = new Map<string, bigint>();
  const add = (balance: TokenBalance, sign: bigint) => {
    if (balance.mint === mint) return;
    const owner = balance.owner ?? tx.accountKeys[balance.accountIndex] ?? String(balance.accountIndex);
    const key = `${owner} ${balance.mint}`;
    others.set(key, (others.get(key) ?? 0n) + sign * balance.amount);
  };
  for (const balance of tx.preTokenBalances) add(balance, -1n);
  for (const balance of tx.postTokenBalances) add(balance, 1n);
  for (const [key, otherDelta] of others) {
    const delta = deltas.get(key.slice(0, key.indexOf(" "))) ?? 0n;
    if ((delta < 0n && otherDelta > 0n) || (delta > 0n && otherDelta < 0n)) return true;
  }
  return false;
}

/**
 * Base units as a UI amount: the exact decimal (base units shifted by `decimals`), then the double
 * nearest to it, so 1100000 USDC base units read 1.1 and never 1.0999999.
 */
export function uiAmount(units: bigint, decimals: number): number {
  if (decimals === 0) return Number(units);
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(decimals + 1, "0");
  const text = `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
  return Number(negative ? `-${text}` : text);
}
