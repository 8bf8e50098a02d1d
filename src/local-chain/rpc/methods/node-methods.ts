import { createHash } from "node:crypto";
import { getBase58Decoder } from "@solana/kit";
import type { LocalChain } from "../../runtime/local-chain.ts";
import { localKey } from "../../state/local-keys.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import { API_VERSION, booleanOf, configParam, contextSlotOf, withContext } from "../rpc-params.ts";
import { FEATURE_SET } from "./cluster-methods.ts";

/** The local chain's epochs: 432,000 slots from slot 0, no warmup (what its Clock sysvar says). */
const SLOTS_PER_EPOCH = 432_000n;
const HOST = "127.0.0.1";

/**
 * The node and its cluster: getGenesisHash, getIdentity, getClusterNodes, getEpochSchedule and
 * getSupply. The local chain is a cluster of one node, whose identity is a local key of its own.
 * Its genesis hash stands for the chain it started as: derived from the moment of its slot 0, so
 * it stays the same across restarts from saved state, and a fresh chain (a reset) gets a new one,
 * as wallets expect of a new cluster.
 */
export function nodeMethods(chain: LocalChain): Record<string, RpcMethod> {
  const identity = localKey("validator identity").address;
  const genesisDigest = () =>
    createHash("sha256").update(`local chain genesis ${chain.clock.state().genesisMs}`).digest();

  return {
    getGenesisHash: () => getBase58Decoder().decode(genesisDigest()),

    getIdentity: () => ({ identity }),

    getClusterNodes(_params, _answer, caller) {
      // The RPC port is the one the request came in on (PubSub listens on the next one); a caller
      // in this process has none.
      const port = caller.port;
      return [
        {
          pubkey: identity,
          gossip: null,
          tvu: null,
          tpu: null,
          tpuQuic: null,
          tpuForwards: null,
          tpuForwardsQuic: null,
          tpuVote: null,
          serveRepair: null,
          rpc: port === undefined ? null : `${HOST}:${port}`,
          pubsub: port === undefined ? null : `${HOST}:${port + 1}`,
          version: API_VERSION,
          featureSet: FEATURE_SET,
          clientId: "Agave",
          // A u16 from the genesis, as a cluster's shred version comes from its genesis hash.
          shredVersion: genesisDigest().readUInt16LE(0) || 1,
        },
      ];
    },

    getEpochSchedule: () => ({
      slotsPerEpoch: SLOTS_PER_EPOCH,
      leaderScheduleSlotOffset: SLOTS_PER_EPOCH,
      warmup: false,
      firstNormalEpoch: 0n,
      firstNormalSlot: 0n,
    }),

    getSupply(params) {
      const config = configParam(params, 0);
      const slot = contextSlotOf(chain, config);
      booleanOf(config, "excludeNonCirculatingAccountsList", false);
      // Every lamport the chain's accounts hold beyond a fresh runtime's own (sysvars, builtin
      // programs): the faucet, wallets, mints, token accounts. Nothing is locked up here, so
      // nothing is non-circulating.
      let total = 0n;
      for (const [, account] of chain.savedAccounts()) total += BigInt(account.lamports);
      return withContext(slot, {
        total,
        circulating: total,
        nonCirculating: 0n,
        nonCirculatingAccounts: [],
      });
    },
  };
}
