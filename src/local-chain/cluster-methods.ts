import { getBase58Encoder } from "@solana/kit";
import { INVALID_PARAMS, JsonRpcError } from "./json-rpc-error.ts";
import type { RpcMethod } from "./json-rpc-handler.ts";
import type { LocalChain } from "./local-chain.ts";
import {
  API_VERSION,
  commitmentOf,
  configParam,
  contextSlotOf,
  requireParams,
  stringParam,
  withContext,
} from "./rpc-params.ts";

/**
 * Identifies the runtime's feature set in getVersion, as validators do (a u32 hash of the active
 * features). The local chain runs LiteSVM's mainnet feature set; this is the local chain's own id.
 */
const FEATURE_SET = 1_794_046_402;

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
      const blockhash = stringParam(params[0]);
      // Agave reports a bad hash here without the usual "Invalid param: " prefix.
      let bytes: number;
      try {
        bytes = /^[1-9A-HJ-NP-Za-km-z]*$/.test(blockhash) ? getBase58Encoder().encode(blockhash).length : -1;
      } catch {
        bytes = -1;
      }
      if (bytes < 0) throw new JsonRpcError(INVALID_PARAMS, "Invalid");
      if (bytes !== 32) throw new JsonRpcError(INVALID_PARAMS, "WrongSize");
      const slot = contextSlot(configParam(params, 1));
      return withContext(slot, chain.isBlockhashValid(blockhash));
    },
  };
}
