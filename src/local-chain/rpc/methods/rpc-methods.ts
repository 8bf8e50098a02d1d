import type { RateLimitConfig } from "../../../config.ts";
import { cheatcodeMethods } from "../../cheatcodes/cheatcodes.ts";
import type { PoolPricing } from "../../pools/pool-prices.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import type { TokenAccountIndex } from "../../runtime/token-account-index.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import { accountMethods } from "./account-methods.ts";
import { blockMethods } from "./block-methods.ts";
import { clusterMethods } from "./cluster-methods.ts";
import { epochMethods } from "./epoch-methods.ts";
import { nodeMethods } from "./node-methods.ts";
import { programAccountsMethods } from "./program-accounts-methods.ts";
import { transactionMethods } from "./transaction-methods.ts";
import { validatorMethods } from "./validator-methods.ts";

/**
 * Every JSON-RPC method the local chain serves. Each call first brings the chain up to the wall
 * clock (a new slot and blockhash when one is due), as a validator would have produced them.
 */
export function createRpcMethods(options: {
  chain: LocalChain;
  /** Serve surfpool's cheatcodes; without them surfnet_* are unknown methods, as on a validator. */
  cheatcodes?: boolean;
  /** The chain's own pools as prices read them: what surfnet_setTokenPrice rebalances. */
  pricing?: PoolPricing;
  /** requestAirdrop per client address. */
  airdropLimit: RateLimitConfig;
  /** The token accounts by mint, owner and delegate; absent: the token methods scan. */
  tokenIndex?: TokenAccountIndex;
}): Record<string, RpcMethod> {
  const { chain, tokenIndex } = options;
  const methods = {
    ...clusterMethods(chain),
    ...accountMethods(chain, tokenIndex),
    ...epochMethods(chain),
    ...transactionMethods(chain, { airdropLimit: options.airdropLimit }),
    ...programAccountsMethods(chain, tokenIndex),
    ...blockMethods(chain),
    ...nodeMethods(chain),
    ...validatorMethods(chain),
    ...(options.cheatcodes === false ? {} : cheatcodeMethods(chain, options.pricing)),
  };
  return Object.fromEntries(
    Object.entries(methods).map(([name, method]) => [
      name,
      ((params, answer, caller) => {
        chain.tick();
        return method(params, answer, caller);
      }) satisfies RpcMethod,
    ]),
  );
}

/** How many positional params each method takes, at least and at most (Agave's signatures). */
export const LOCAL_CHAIN_PARAM_COUNTS: Readonly<Record<string, readonly [number, number]>> = {
  getHealth: [0, 0],
  getVersion: [0, 0],
  getSlot: [0, 1],
  getBlockHeight: [0, 1],
  getEpochInfo: [0, 1],
  getLatestBlockhash: [0, 1],
  isBlockhashValid: [1, 2],
  getBalance: [1, 2],
  getAccountInfo: [1, 2],
  getMultipleAccounts: [1, 2],
  getTokenAccountBalance: [1, 2],
  getTokenSupply: [1, 2],
  getTokenAccountsByOwner: [2, 3],
  getMinimumBalanceForRentExemption: [1, 2],
  sendTransaction: [1, 2],
  simulateTransaction: [1, 2],
  getSignatureStatuses: [1, 2],
  getTransaction: [1, 2],
  getSignaturesForAddress: [1, 2],
  getFeeForMessage: [1, 2],
  requestAirdrop: [2, 3],
  minimumLedgerSlot: [0, 0],
  getProgramAccounts: [1, 2],
  getTokenLargestAccounts: [1, 2],
  getTokenAccountsByDelegate: [2, 3],
  getBlock: [1, 2],
  getBlocks: [1, 3],
  getBlockTime: [1, 1],
  getFirstAvailableBlock: [0, 0],
  getRecentPrioritizationFees: [0, 1],
  getGenesisHash: [0, 0],
  getIdentity: [0, 0],
  getClusterNodes: [0, 0],
  getEpochSchedule: [0, 0],
  getSupply: [0, 1],
  getBlocksWithLimit: [2, 3],
  getTransactionCount: [0, 1],
  getVoteAccounts: [0, 1],
  getLeaderSchedule: [0, 2],
  getSlotLeader: [0, 1],
  getSlotLeaders: [2, 2],
  getBlockProduction: [0, 1],
  getBlockCommitment: [1, 1],
  getRecentPerformanceSamples: [0, 1],
  getLargestAccounts: [0, 1],
  getStakeMinimumDelegation: [0, 1],
  getHighestSnapshotSlot: [0, 0],
  getMaxRetransmitSlot: [0, 0],
  getMaxShredInsertSlot: [0, 0],
  getInflationGovernor: [0, 1],
  getInflationRate: [0, 0],
  getInflationReward: [1, 2],
  surfnet_setAccount: [2, 2],
  surfnet_setTokenAccount: [3, 4],
  surfnet_setTokenPrice: [2, 2],
};

/** The names of the methods, for bounded metric labels. */
export const LOCAL_CHAIN_METHODS: readonly string[] = Object.keys(LOCAL_CHAIN_PARAM_COUNTS);
