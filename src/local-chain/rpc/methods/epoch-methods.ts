import type { LocalChain } from "../../runtime/local-chain.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import { configParam, contextSlotOf } from "../rpc-params.ts";

/** Slots in an epoch on Solana's clusters (and in the local chain's Clock sysvar). */
export const SLOTS_PER_EPOCH = 432_000;

/**
 * getEpochInfo, as Agave answers it: kit's confirmation strategy reads it (block height from
 * the slot) before it waits for a signature, so without it no kit client confirms anything. The
 * local chain skips no slot, so a block's height is its slot; its epochs are a cluster's length.
 */
export function epochMethods(chain: LocalChain): Record<string, RpcMethod> {
  return {
    getEpochInfo(params) {
      const slot = contextSlotOf(chain, configParam(params, 0));
      return {
        absoluteSlot: BigInt(slot),
        blockHeight: BigInt(slot),
        epoch: BigInt(Math.floor(slot / SLOTS_PER_EPOCH)),
        slotIndex: BigInt(slot % SLOTS_PER_EPOCH),
        slotsInEpoch: BigInt(SLOTS_PER_EPOCH),
        transactionCount: BigInt(chain.ledger.transactionCount(slot)),
      };
    },
  };
}
