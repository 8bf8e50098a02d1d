import { voteCommission, voteStateOf } from "../../encoding/parse-account.ts";
import type { LocalChain } from "../../runtime/local-chain.ts";
import { localKey } from "../../state/local-keys.ts";
import { invalidParams, JsonRpcError, paramError } from "../json-rpc-error.ts";
import type { RpcMethod } from "../json-rpc-handler.ts";
import {
  booleanOf,
  commitmentOf,
  configParam,
  contextSlotOf,
  invalidType,
  listParam,
  pubkeyParam,
  requireParams,
  slotParam,
  u64Param,
  usizeParam,
  withContext,
} from "../rpc-params.ts";
import { bareCommitment } from "./account-methods.ts";

/** Agave's limits and errors (rpc/src/rpc.rs, rpc-client-api's custom_error.rs and request.rs). */
const MAX_GET_CONFIRMED_BLOCKS_RANGE = 500_000;
const MAX_GET_SLOT_LEADERS = 5_000;
const PERFORMANCE_SAMPLES_LIMIT = 720;
const NUM_LARGEST_ACCOUNTS = 20;
/** getVoteAccounts: a vote older than this many slots is delinquent; the epoch credits shown. */
const DELINQUENT_VALIDATOR_SLOT_DISTANCE = 128n;
const MAX_EPOCH_CREDITS_HISTORY = 5;
const VOTE_PROGRAM = "Vote111111111111111111111111111111111111111";
const BLOCK_CLEANED_UP = -32001;
const BLOCK_NOT_AVAILABLE = -32004;
const NO_SNAPSHOT = -32008;
/** SlotHistory's window (MAX_ENTRIES, a bit per slot): getBlockProduction's oldest slot. */
const SLOT_HISTORY_ENTRIES = 1024 * 1024;
/** The local chain's epochs (its Clock sysvar's): 432,000 slots, no warmup. */
const SLOTS_PER_EPOCH = 432_000;
/** A performance sample every 60 s (Agave's SAMPLE_INTERVAL), over the slots of that minute. */
const SAMPLE_SECONDS = 60;
/**
 * Slots in a year as the runtime counts them for inflation (years_as_slots with the default
 * 160 ticks a second and 64 ticks a slot).
 */
const SLOTS_PER_YEAR = (365.242_199 * 24 * 60 * 60 * 160) / 64;
/**
 * The inflation of a cluster whose features are all active, as LiteSVM's are: `full_inflation`
 * makes the bank's inflation `Inflation::full()` (solana-inflation), no foundation share.
 */
const INFLATION = { initial: 0.08, terminal: 0.015, taper: 0.15, foundation: 0, foundationTerm: 0 };

/**
 * The stake program's minimum delegation: 1 SOL once `stake_raise_minimum_delegation_to_1_sol` is
 * active, as it is in LiteSVM (its stake program answers GetMinimumDelegation so; the contract
 * test asks it).
 */
const STAKE_MINIMUM_DELEGATION = 1_000_000_000n;

/**
 * What a one-validator Agave cluster answers about its validator, its leader schedule, its
 * blocks in bulk, its samples, inflation and largest accounts (rpc/src/rpc.rs). The local chain
 * is one node that leads every slot and skips none; it holds no vote or stake accounts at genesis
 * and does not vote, so it reports only the vote accounts someone created, no stake behind any
 * block, and no inflation rewards.
 */
export function validatorMethods(chain: LocalChain): Record<string, RpcMethod> {
  const identity = localKey("validator identity").address;
  const firstAvailable = () => chain.ledger.firstSlot ?? chain.slot("processed");
  const epochOf = (slot: bigint) => slot / BigInt(SLOTS_PER_EPOCH);
  /** Agave keeps a leader schedule up to the epoch after the bank's (leaderScheduleSlotOffset). */
  const scheduleKnown = (epoch: bigint, bankSlot: number) => epoch <= epochOf(BigInt(bankSlot)) + 1n;

  /** Slots with a block from `start`, at most `limit`, up to the commitment's slot (getBlocksWithLimit). */
  const blocksWithLimit = (start: bigint, limit: number, config: Record<string, unknown>): number[] => {
    const commitment = commitmentOf(config);
    if (commitment === "processed") throw paramError("Method does not support commitment below `confirmed`");
    if (limit > MAX_GET_CONFIRMED_BLOCKS_RANGE) {
      throw paramError(`Limit too large; max ${MAX_GET_CONFIRMED_BLOCKS_RANGE}`);
    }
    const top = contextSlotOf(chain, config, commitment);
    if (start > BigInt(top)) return [];
    const first = Math.max(Number(start), firstAvailable());
    const count = Math.max(0, Math.min(limit, top - first + 1));
    return Array.from({ length: count }, (_, i) => first + i);
  };

  return {
    getBlocksWithLimit(params, answer) {
      requireParams(params, 2);
      const start = slotParam(params[0]);
      const limit = usizeParam(params[1]);
      const blocks = blocksWithLimit(start, limit, configParam(params, 2));
      answer.charge(blocks.length * 10);
      return blocks;
    },

    getTransactionCount: (params) =>
      BigInt(chain.ledger.transactionCount(contextSlotOf(chain, configParam(params, 0)))),

    getVoteAccounts(params) {
      const config = configParam(params, 0);
      const wanted =
        config.votePubkey === undefined || config.votePubkey === null
          ? undefined
          : pubkeyParam(config.votePubkey, "votePubkey");
      const bankSlot = BigInt(chain.slot(commitmentOf(config)));
      const keepUnstaked = booleanOf(config, "keepUnstakedDelinquents", false);
      const distance =
        config.delinquentSlotDistance === undefined || config.delinquentSlotDistance === null
          ? DELINQUENT_VALIDATOR_SLOT_DISTANCE
          : u64Param(config.delinquentSlotDistance);
      const current: unknown[] = [];
      const delinquent: unknown[] = [];
      // The bank's vote accounts: those the chain holds (none at genesis). Nothing is staked to
      // them here, so each has no activated stake and was no vote account of the epoch's stakes.
      for (const { address, account } of chain.programAccounts(VOTE_PROGRAM)) {
        if (wanted !== undefined && address !== wanted) continue;
        const state = voteStateOf(account.data as Uint8Array, address);
        if (state === undefined) continue;
        const lastVote = state.votes.at(-1)?.slot ?? 0n;
        const info = {
          votePubkey: address,
          nodePubkey: state.nodePubkey,
          activatedStake: 0n,
          commission: voteCommission(state),
          epochVoteAccount: false,
          epochCredits: state.epochCredits
            .slice(-MAX_EPOCH_CREDITS_HISTORY)
            .map((c) => [c.epoch, c.credits, c.previousCredits]),
          lastVote,
          rootSlot: state.rootSlot ?? 0n,
        };
        const isCurrent = bankSlot >= distance ? lastVote > bankSlot - distance : lastVote > 0n;
        if (isCurrent) current.push(info);
        else if (keepUnstaked) delinquent.push(info);
      }
      return { current, delinquent };
    },

    getLeaderSchedule(params, answer) {
      // The first param is a slot or the config in its place (RpcLeaderScheduleConfigWrapper).
      const first = params[0];
      const firstIsConfig = first !== null && typeof first === "object" && !Array.isArray(first);
      const slot = first === undefined || first === null || firstIsConfig ? undefined : slotParam(first);
      const config = firstIsConfig ? configParam(params, 0) : configParam(params, 1);
      const wanted =
        config.identity === undefined || config.identity === null
          ? undefined
          : pubkeyParam(config.identity, "identity");
      const bankSlot = chain.slot(commitmentOf(config));
      const epoch = epochOf(slot ?? BigInt(bankSlot));
      if (!scheduleKnown(epoch, bankSlot)) return null;
      if (wanted !== undefined && wanted !== identity) return {};
      // One leader for every slot of the epoch, by slot index: 432,000 numbers (about 3 MB).
      answer.charge(SLOTS_PER_EPOCH * 7);
      return { [identity]: Array.from({ length: SLOTS_PER_EPOCH }, (_, i) => i) };
    },

    getSlotLeader(params) {
      contextSlotOf(chain, configParam(params, 0));
      return identity;
    },

    getSlotLeaders(params, answer) {
      requireParams(params, 2);
      const start = slotParam(params[0]);
      const limit = u64Param(params[1]);
      if (limit > BigInt(MAX_GET_SLOT_LEADERS))
        throw paramError(`Invalid limit; max ${MAX_GET_SLOT_LEADERS}`);
      const count = Number(limit);
      if (count === 0) return [];
      const bankSlot = chain.slot("finalized");
      const last = start + limit - 1n;
      for (let epoch = epochOf(start); epoch <= epochOf(last); epoch++) {
        if (!scheduleKnown(epoch, bankSlot)) {
          throw paramError(`Invalid slot range: leader schedule for epoch ${epoch} is unavailable`);
        }
      }
      answer.charge(count * 47);
      return Array.from({ length: count }, () => identity);
    },

    getBlockProduction(params) {
      const config = configParam(params, 0);
      const wanted =
        config.identity === undefined || config.identity === null
          ? undefined
          : pubkeyParam(config.identity, "identity");
      const bankSlot = chain.slot(commitmentOf(config));
      let firstSlot = BigInt(bankSlot - (bankSlot % SLOTS_PER_EPOCH));
      let lastSlot = BigInt(bankSlot);
      const range = config.range;
      if (range !== undefined && range !== null) {
        if (typeof range !== "object" || Array.isArray(range)) {
          throw invalidType(range, "struct RpcBlockProductionConfigRange");
        }
        const { firstSlot: from, lastSlot: to } = range as Record<string, unknown>;
        if (from === undefined || from === null) throw invalidParams("missing field `firstSlot`");
        firstSlot = slotParam(from);
        lastSlot = to === undefined || to === null ? BigInt(bankSlot) : slotParam(to);
        if (lastSlot < firstSlot) {
          throw paramError(`lastSlot, ${lastSlot}, cannot be less than firstSlot, ${firstSlot}`);
        }
      }
      // The bank's SlotHistory: the last 2^20 slots up to its own.
      const oldest = BigInt(Math.max(0, bankSlot + 1 - SLOT_HISTORY_ENTRIES));
      if (firstSlot < oldest) throw paramError(`firstSlot, ${firstSlot}, is too small; min ${oldest}`);
      if (lastSlot > BigInt(bankSlot)) {
        throw paramError(`lastSlot, ${lastSlot}, is too large; max ${bankSlot}`);
      }
      // The node leads every slot and skips none: each is a leader slot and a block produced.
      const slots = lastSlot - firstSlot + 1n;
      const byIdentity = wanted !== undefined && wanted !== identity ? {} : { [identity]: [slots, slots] };
      return withContext(bankSlot, { byIdentity, range: { firstSlot, lastSlot } });
    },

    getBlockCommitment(params) {
      requireParams(params, 1);
      slotParam(params[0]);
      // The commitment cache counts votes by stake; nothing votes on the local chain.
      return { commitment: null, totalStake: 0n };
    },

    getRecentPerformanceSamples(params) {
      const value = params[0];
      const limit = value === undefined || value === null ? PERFORMANCE_SAMPLES_LIMIT : usizeParam(value);
      if (limit > PERFORMANCE_SAMPLES_LIMIT)
        throw paramError(`Invalid limit; max ${PERFORMANCE_SAMPLES_LIMIT}`);
      // A sample per minute of slots, newest first, each ending at its `slot`.
      const slotsPerSample = Math.max(1, Math.round((SAMPLE_SECONDS * 1000) / chain.clock.state().slotMs));
      const top = chain.slot("processed");
      const samples: unknown[] = [];
      for (let end = top; samples.length < limit && end - slotsPerSample >= 0; end -= slotsPerSample) {
        const transactions = BigInt(chain.ledger.countInSlots(end - slotsPerSample + 1, end));
        samples.push({
          slot: BigInt(end),
          numTransactions: transactions,
          numNonVoteTransactions: transactions,
          numSlots: BigInt(slotsPerSample),
          samplePeriodSecs: SAMPLE_SECONDS,
        });
      }
      return samples;
    },

    getLargestAccounts(params) {
      const config = configParam(params, 0);
      const slot = contextSlotOf(chain, config, commitmentOf(config));
      const filter = config.filter;
      if (
        filter !== undefined &&
        filter !== null &&
        filter !== "circulating" &&
        filter !== "nonCirculating"
      ) {
        if (typeof filter !== "string") throw invalidType(filter, "a filter");
        throw invalidParams(`unknown variant \`${filter}\`, expected \`circulating\` or \`nonCirculating\``);
      }
      booleanOf(config, "sortResults", true);
      // The accounts getSupply counts; none is non-circulating here.
      if (filter === "nonCirculating") return withContext(slot, []);
      const largest = chain
        .savedAccounts()
        .map(([address, account]) => ({ address, lamports: BigInt(account.lamports) }))
        .filter((account) => account.lamports > 0n)
        .sort((a, b) => (a.lamports === b.lamports ? 0 : a.lamports > b.lamports ? -1 : 1))
        .slice(0, NUM_LARGEST_ACCOUNTS);
      return withContext(slot, largest);
    },

    getStakeMinimumDelegation(params) {
      const slot = contextSlotOf(chain, configParam(params, 0));
      return withContext(slot, STAKE_MINIMUM_DELEGATION);
    },

    getHighestSnapshotSlot() {
      // The local chain makes no snapshot archives (its state file is no snapshot a validator could boot from).
      throw new JsonRpcError(NO_SNAPSHOT, "No snapshot");
    },

    // One node: it inserts and retransmits shreds of its own newest slot.
    getMaxRetransmitSlot: () => BigInt(chain.slot("processed")),
    getMaxShredInsertSlot: () => BigInt(chain.slot("processed")),

    getInflationGovernor(params) {
      bareCommitment(params[0]);
      return { ...INFLATION };
    },

    getInflationRate() {
      const epoch = Math.floor(chain.slot("finalized") / SLOTS_PER_EPOCH);
      const year = (epoch * SLOTS_PER_EPOCH) / SLOTS_PER_YEAR;
      const total = Math.max(INFLATION.initial * (1 - INFLATION.taper) ** year, INFLATION.terminal);
      const foundation =
        INFLATION.foundation > 0 && year < INFLATION.foundationTerm ? total * INFLATION.foundation : 0;
      return { total, validator: total - foundation, foundation, epoch: BigInt(epoch) };
    },

    getInflationReward(params) {
      requireParams(params, 1);
      const addresses = listParam(params[0], Number.MAX_SAFE_INTEGER, (item, i) =>
        pubkeyParam(item, `addresses[${i}]`),
      );
      const config = configParam(params, 1);
      const commitment = commitmentOf(config);
      const slot = contextSlotOf(chain, config, commitment);
      const epoch =
        config.epoch === undefined || config.epoch === null
          ? BigInt(Math.max(0, Math.floor(slot / SLOTS_PER_EPOCH) - 1))
          : u64Param(config.epoch);
      // Rewards for an epoch are paid in the first block of the next one.
      const boundary = (epoch + 1n) * BigInt(SLOTS_PER_EPOCH);
      const first = firstAvailable();
      if (boundary < BigInt(first)) {
        throw new JsonRpcError(
          BLOCK_CLEANED_UP,
          `Block ${boundary} cleaned up, does not exist on node. First available block: ${first}`,
        );
      }
      if (blocksWithLimit(boundary, 1, { ...config, commitment }).length === 0) {
        throw new JsonRpcError(BLOCK_NOT_AVAILABLE, `Block not available for slot ${boundary}`);
      }
      // The boundary block holds no rewards: nothing is staked on the local chain.
      return addresses.map(() => null);
    },
  };
}
