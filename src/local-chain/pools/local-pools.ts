import { address, getAddressEncoder, getProgramDerivedAddress, none, some } from "@solana/kit";
import { AccountState, getMintDecoder, getMintEncoder, getTokenEncoder } from "@solana-program/token";
import type { Catalog } from "../../token/catalog.ts";
import type { LocalChain } from "../runtime/local-chain.ts";
import type { ChainKeys } from "../state/chain-keys.ts";
import type { LocalKey } from "../state/local-keys.ts";

/**
 * The embedded chain's swap pools: constant-product pools for the catalog's main pairs (every
 * token against USDC, every other token against SOL), priced at the catalog's snapshot. Each pool
 * is a key of the chain's own (../state/chain-keys.ts: from the chain's random seed, so no one else can sign
 * as it) that owns two vaults: its associated token accounts of the pair's mints, real token
 * accounts on the chain.
 * They are a development chain's stand-in for the markets Jupiter routes through, not Jupiter.
 */
export interface LocalPool {
  /** "SOL/USDC": the pair's symbols. */
  readonly name: string;
  /** The vaults' owner; it signs the pool's side of a swap (see local-swap-routes.ts). */
  readonly key: LocalKey;
  readonly mintA: string;
  readonly mintB: string;
  readonly decimalsA: number;
  readonly decimalsB: number;
  readonly vaultA: string;
  readonly vaultB: string;
  /** What a new chain puts in the vaults (the chain's balances are the truth afterwards). */
  readonly reserveA: bigint;
  readonly reserveB: bigint;
}

/** Each side of a pool holds this much at the catalog's price: a demo's swaps barely move it. */
export const LOCAL_POOL_DEPTH_USD = 5_000_000;
/** What each pool's key holds to pay its own transactions' fees. */
const POOL_LAMPORTS = 10n * 1_000_000_000n;
const TOKEN_PROGRAM = address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
const ASSOCIATED_TOKEN_PROGRAM = address("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");
const SYSTEM_PROGRAM = address("11111111111111111111111111111111");
const NATIVE_MINT = "So11111111111111111111111111111111111111112";
const TOKEN_ACCOUNT_SIZE = 165;

/** The pools of `catalog` on the chain of `keys`, with their vaults' addresses (derived, nothing read from a chain). */
export async function localPools(catalog: Catalog, keys: Pick<ChainKeys, "pool">): Promise<LocalPool[]> {
  const bySymbol = new Map(catalog.tokens.map((t) => [t.symbol, t]));
  const usdc = bySymbol.get("USDC");
  const sol = bySymbol.get("SOL");
  const pairs: [(typeof catalog.tokens)[number], (typeof catalog.tokens)[number]][] = [];
  for (const quote of [usdc, sol]) {
    if (quote === undefined) continue;
    for (const token of catalog.tokens) {
      if (token === usdc || token === quote || !(token.price > 0) || !(quote.price > 0)) continue;
      pairs.push([token, quote]);
    }
  }
  const pools: LocalPool[] = [];
  for (const [a, b] of pairs) {
    const name = `${a.symbol}/${b.symbol}`;
    const key = keys.pool(name);
    pools.push({
      name,
      key,
      mintA: a.mint,
      mintB: b.mint,
      decimalsA: a.decimals,
      decimalsB: b.decimals,
      vaultA: await associatedAccount(key.address, a.mint),
      vaultB: await associatedAccount(key.address, b.mint),
      reserveA: reserveOf(a.price, a.decimals),
      reserveB: reserveOf(b.price, b.decimals),
    });
  }
  return pools;
}

/**
 * Writes the pools into a chain as it gets its keys (../state/install-chain-keys.ts): each pool's
 * key with SOL for its fees, and its two vaults holding the reserves. The mints' supply grows by
 * what the vaults hold, as if it had been minted to them; wrapped SOL's vault holds its reserve as
 * lamports, as a native account does.
 */
export function seedLocalPools(
  chain: Pick<LocalChain, "account" | "setAccount" | "rentExemption">,
  pools: readonly LocalPool[],
): void {
  const rent = chain.rentExemption(TOKEN_ACCOUNT_SIZE);
  for (const pool of pools) {
    chain.setAccount(pool.key.address, {
      lamports: POOL_LAMPORTS,
      programAddress: SYSTEM_PROGRAM,
      data: new Uint8Array(),
      executable: false,
    });
    for (const [mint, vault, amount] of [
      [pool.mintA, pool.vaultA, pool.reserveA],
      [pool.mintB, pool.vaultB, pool.reserveB],
    ] as const) {
      const native = mint === NATIVE_MINT;
      const data = getTokenEncoder().encode({
        mint: address(mint),
        owner: pool.key.address,
        amount,
        delegate: none(),
        state: AccountState.Initialized,
        isNative: native ? some(rent) : none(),
        delegatedAmount: 0n,
        closeAuthority: none(),
      }) as Uint8Array;
      chain.setAccount(vault, {
        lamports: native ? rent + amount : rent,
        programAddress: TOKEN_PROGRAM,
        data,
        executable: false,
      });
      if (native) continue;
      const account = chain.account(mint);
      if (account === undefined) throw new Error(`local pools: the mint ${mint} is not on the chain`);
      const state = getMintDecoder().decode(account.data);
      chain.setAccount(mint, {
        ...account,
        data: getMintEncoder().encode({ ...state, supply: state.supply + amount }) as Uint8Array,
      });
    }
  }
}

/** LOCAL_POOL_DEPTH_USD of a token at `price`, in base units (thousandths of a token exact). */
function reserveOf(price: number, decimals: number): bigint {
  return (BigInt(Math.round((LOCAL_POOL_DEPTH_USD / price) * 1000)) * 10n ** BigInt(decimals)) / 1000n;
}

async function associatedAccount(owner: string, mint: string): Promise<string> {
  const encoder = getAddressEncoder();
  const [found] = await getProgramDerivedAddress({
    programAddress: ASSOCIATED_TOKEN_PROGRAM,
    seeds: [encoder.encode(address(owner)), encoder.encode(TOKEN_PROGRAM), encoder.encode(address(mint))],
  });
  return found;
}
