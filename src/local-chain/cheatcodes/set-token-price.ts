import type { LocalPool } from "../pools/local-pools.ts";
import { type PoolPricing, poolPrices, roundPoolPrice, usdOf } from "../pools/pool-prices.ts";
import { paramError } from "../rpc/json-rpc-error.ts";
import type { ChainAccount } from "../runtime/chain-account.ts";
import type { LocalChain } from "../runtime/local-chain.ts";

const NATIVE_MINT = "So11111111111111111111111111111111111111112";
const U64_LIMIT = 1n << 64n;
/** Where a token account keeps its amount, and a mint its supply (u64, little-endian). */
const AMOUNT_OFFSET = 64;
const SUPPLY_OFFSET = 36;

/** What surfnet_setTokenPrice did: the price the pools now give, and each pool's new reserve. */
export interface TokenPriceSet {
  readonly mint: string;
  /** The price the service now reads (the new reserves' mid price, 8 significant digits). */
  readonly price: number;
  readonly pools: readonly { readonly pool: string; readonly vault: string; readonly reserve: string }[];
}

/**
 * Moves a pooled token's dollar price to `price` on the local chain: in each of the chain's own
 * pools that holds the token, its side's reserve is set so that the pool's mid price is `price`
 * against the other side's current dollar price (pool-prices.ts), the other side left as it is.
 * So the token's price moves and no other token's does, and every pool of the token agrees (a
 * swap routed through any of them is held to the same reference). The vaults are written as a
 * cheatcode writes, and the mint's supply follows what its vaults gained or lost, as the pools'
 * seeding counts it. Stablecoins are the pools' unit (worth 1) and are refused, as is a token no
 * pool holds (the service prices it from the catalog).
 */
export function setTokenPrice(
  chain: Pick<LocalChain, "account" | "setAccount">,
  pricing: PoolPricing,
  mint: string,
  price: number,
): TokenPriceSet {
  if (pricing.stablecoins.has(mint))
    throw paramError(`${mint} is a US dollar stablecoin: the local pools quote in it, and its price stays 1`);
  const pools = pricing.poolsOf.get(mint);
  if (pools === undefined)
    throw paramError(`no local pool holds ${mint}: its price is the catalog's and cannot be moved`);
  const reserveOf = (vault: string) => amountOf(chain.account(vault));
  const before = poolPrices(pricing, reserveOf);
  const writes = pools.map((pool) =>
    rebalance(pool, mint, price, reserveOf, (other) => usdOf(pricing, before, other)),
  );
  const growth = writes.reduce((sum, w) => sum + (w.reserve - w.was), 0n);
  const mintAccount = mint === NATIVE_MINT ? undefined : chain.account(mint);
  if (mintAccount !== undefined && readU64(mintAccount.data, SUPPLY_OFFSET) + growth >= U64_LIMIT)
    throw paramError(`${price} is out of range: ${mint}'s supply would pass u64`);
  for (const { vault, reserve, was } of writes) {
    const account = chain.account(vault) as ChainAccount;
    chain.setAccount(vault, {
      ...account,
      data: withU64(account.data, AMOUNT_OFFSET, reserve),
      // Wrapped SOL's vault holds its reserve as lamports too.
      lamports: mint === NATIVE_MINT ? account.lamports - was + reserve : account.lamports,
    });
  }
  if (mintAccount !== undefined && growth !== 0n) {
    const supply = readU64(mintAccount.data, SUPPLY_OFFSET) + growth;
    chain.setAccount(mint, {
      ...mintAccount,
      data: withU64(mintAccount.data, SUPPLY_OFFSET, supply < 0n ? 0n : supply),
    });
  }
  const after = poolPrices(pricing, reserveOf).get(mint);
  return {
    mint,
    price: after === undefined ? 0 : roundPoolPrice(after),
    pools: writes.map((w) => ({ pool: w.pool.name, vault: w.vault, reserve: w.reserve.toString() })),
  };
}

/** The token's new reserve in `pool` for `price`, or a refusal naming the pool. */
function rebalance(
  pool: LocalPool,
  mint: string,
  price: number,
  reserveOf: (vault: string) => bigint | undefined,
  usd: (mint: string) => number | undefined,
): { pool: LocalPool; vault: string; reserve: bigint; was: bigint } {
  const tokenIsA = pool.mintA === mint;
  const [vault, otherVault] = tokenIsA ? [pool.vaultA, pool.vaultB] : [pool.vaultB, pool.vaultA];
  const [decimals, otherDecimals] = tokenIsA
    ? [pool.decimalsA, pool.decimalsB]
    : [pool.decimalsB, pool.decimalsA];
  const was = reserveOf(vault);
  const other = reserveOf(otherVault);
  const otherUsd = usd(tokenIsA ? pool.mintB : pool.mintA);
  if (was === undefined || other === undefined || other <= 0n || otherUsd === undefined)
    throw paramError(
      `the local pool ${pool.name} is empty or has no price on its other side: nothing to hold ${price} to`,
    );
  // The other side's dollars, in the token at `price`: the pool's two sides then weigh the same.
  const units = Math.round((Number(other) * otherUsd * 10 ** (decimals - otherDecimals)) / price);
  if (!Number.isFinite(units) || units < 1 || BigInt(units) >= U64_LIMIT)
    throw paramError(
      `${price} is out of range for the local pool ${pool.name}: its reserve would be ${units} base units`,
    );
  return { pool, vault, reserve: BigInt(units), was };
}

/** A token account's amount; undefined when the account is not one. */
function amountOf(account: ChainAccount | undefined): bigint | undefined {
  if (account === undefined || account.data.length < AMOUNT_OFFSET + 8) return undefined;
  return readU64(account.data, AMOUNT_OFFSET);
}

function readU64(data: ChainAccount["data"], offset: number): bigint {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(offset);
}

function withU64(data: ChainAccount["data"], offset: number, value: bigint): Uint8Array {
  const copy = Buffer.from(data);
  copy.writeBigUInt64LE(value, offset);
  return new Uint8Array(copy.buffer, copy.byteOffset, copy.byteLength);
}
