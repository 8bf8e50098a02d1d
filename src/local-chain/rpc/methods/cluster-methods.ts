import type { LocalChain } from "../../runtime/local-chain.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  API_VERSION,
  blockhashParam,
  commitmentOf,
  configParam,
  contextSlotOf,
  requireParams,
  withContext,
} from "../rpc-params.ts";

/**
 * Identifies the runtime's feature set in getVersion, as validators do (a u32 hash of the active
 * features). The local chain runs LiteSVM's mainnet feature set; this is the local chain's own id.
 */
export const FEATURE_SET = 1_794_046_402;

/** The cluster's state: health, version, slot, block height and blockhashes. */
export function clusterMethods(chain: LocalChain): Record<string, RpcMethod> {
  const contextSlot = (config: Record<string, unknown>) => contextSlotOf(chain, config);
  return {
    getHealth: () => "ok",
    getVersion: () => ({ "solana-core": API_VERSION, "feature-set": FEATURE_SET }),
    getSlot: (params) => BigInt(contextSlot(configParam(params, 0))),
    // The local chain skips no slot, so a block's height is its slot.
    getBlockHeight: (params) => BigInt(contextSlot(configParam(params, 0))),
    getLatestBlockhash(params) {
      const config = configParam(params, 0);
      const commitment = commitmentOf(config);
      const slot = contextSlot(config);
      const { blockhash, lastValidBlockHeight } = chain.latestBlockhash(commitment);
      return withContext(slot, { blockhash, lastValidBlockHeight: BigInt(lastValidBlockHeight) });
    },
    isBlockhashValid(params) {
      requireParams(params, 1);
      const blockhash = blockhashParam(params[0]);
      const slot = contextSlot(configParam(params, 1));
      return withContext(slot, chain.isBlockhashValid(blockhash));
    },
  };
}
