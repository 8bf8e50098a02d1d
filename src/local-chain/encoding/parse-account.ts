import { type Address, getAddressDecoder, getBase58Decoder } from "@solana/kit";
import type { RawAccount } from "../runtime/token-accounts.ts";

/**
 * jsonParsed data of the accounts Agave's account decoder parses besides token mints and token
 * accounts (account-decoder/src/parse_account_data.rs and its parse_*.rs): nonce accounts,
 * sysvars, stake accounts, address lookup tables and the upgradeable loader's accounts, in
 * Agave's shapes (`{program, parsed: {type, info}, space}`, u64 amounts as strings where Agave's
 * StringAmount has them). Anything it cannot parse is undefined, and the caller falls back to
 * base64, as Agave does. Token multisigs are parsed with the other token accounts
 * (account-encoding.ts). Config accounts (the config program is not in LiteSVM) are not parsed.
 */
export function parsedAccountData(account: RawAccount, address: string | undefined): unknown {
  const data = account.data as Uint8Array;
  const parse = PARSERS[account.programAddress];
  if (parse === undefined) return undefined;
  try {
    const parsed = parse(new Reader(data), address);
    if (parsed === undefined) return undefined;
    return { program: parsed.program, parsed: parsed.parsed, space: data.length };
  } catch {
    // Short or malformed data: not this program's account after all.
    return undefined;
  }
}

type Parsed = { program: string; parsed: unknown } | undefined;

const SYSTEM = "11111111111111111111111111111111";
const SYSVAR = "Sysvar1111111111111111111111111111111111111";
const STAKE = "Stake11111111111111111111111111111111111111";
const LOOKUP_TABLE = "AddressLookupTab1e1111111111111111111111111";
const UPGRADEABLE_LOADER = "BPFLoaderUpgradeab1e11111111111111111111111";
const VOTE = "Vote111111111111111111111111111111111111111";

const PARSERS: Record<string, (reader: Reader, address: string | undefined) => Parsed> = {
  [SYSTEM]: parseNonce,
  [SYSVAR]: parseSysvar,
  [STAKE]: parseStake,
  [LOOKUP_TABLE]: parseLookupTable,
  [UPGRADEABLE_LOADER]: parseUpgradeableLoader,
  [VOTE]: (reader, address) => {
    const state = readVoteState(reader, address);
    return state === undefined ? undefined : typed("vote", "vote", voteJson(state));
  },
};

/** Little-endian reads over account data, bincode's layout; throws past the end. */
class Reader {
  offset = 0;
  readonly data: Uint8Array;
  private readonly view: DataView;
  constructor(data: Uint8Array) {
    this.data = data;
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  get left() {
    return this.data.length - this.offset;
  }
  u8() {
    return this.view.getUint8(this.take(1));
  }
  u16() {
    return this.view.getUint16(this.take(2), true);
  }
  u32() {
    return this.view.getUint32(this.take(4), true);
  }
  u64() {
    return this.view.getBigUint64(this.take(8), true);
  }
  i64() {
    return this.view.getBigInt64(this.take(8), true);
  }
  f64() {
    return this.view.getFloat64(this.take(8), true);
  }
  u128() {
    const low = this.u64();
    return (this.u64() << 64n) | low;
  }
  bool() {
    return this.u8() !== 0;
  }
  pubkey(): string {
    const at = this.take(32);
    return addressDecoder.decode(this.data.subarray(at, at + 32)) as Address;
  }
  hash(): string {
    const at = this.take(32);
    return base58.decode(this.data.subarray(at, at + 32));
  }
  optionPubkey(): string | null {
    return this.bool() ? this.pubkey() : null;
  }
  rest(): Uint8Array {
    return this.data.subarray(this.take(this.left));
  }
  private take(bytes: number): number {
    if (this.offset + bytes > this.data.length) throw new RangeError("account data too short");
    const at = this.offset;
    this.offset += bytes;
    return at;
  }
}

const addressDecoder = getAddressDecoder();
const base58 = getBase58Decoder();
const typed = (program: string, type: string, info?: unknown): Parsed => ({
  program,
  parsed: info === undefined ? { type } : { type, info },
});

/** parse_nonce.rs: only an initialized nonce parses (an uninitialized one is any system account). */
function parseNonce(reader: Reader): Parsed {
  if (reader.data.length !== 80) return undefined;
  reader.u32(); // version: legacy or current, the same fields
  if (reader.u32() !== 1) return undefined;
  const authority = reader.pubkey();
  const blockhash = reader.hash();
  const lamportsPerSignature = reader.u64();
  return typed("nonce", "initialized", {
    authority,
    blockhash,
    feeCalculator: { lamportsPerSignature: lamportsPerSignature.toString() },
  });
}

/** parse_sysvar.rs, by the sysvar's address. */
function parseSysvar(reader: Reader, address: string | undefined): Parsed {
  const sysvar = (type: string, info: unknown) => typed("sysvar", type, info);
  const list = <T>(read: () => T): T[] => {
    const count = Number(reader.u64());
    if (count * 8 > reader.left) throw new RangeError("bad length");
    return Array.from({ length: count }, read);
  };
  switch (address) {
    case "SysvarC1ock11111111111111111111111111111111":
      return sysvar("clock", {
        slot: reader.u64(),
        epochStartTimestamp: reader.i64(),
        epoch: reader.u64(),
        leaderScheduleEpoch: reader.u64(),
        unixTimestamp: reader.i64(),
      });
    case "SysvarEpochSchedu1e111111111111111111111111":
      return sysvar("epochSchedule", {
        slotsPerEpoch: reader.u64(),
        leaderScheduleSlotOffset: reader.u64(),
        warmup: reader.bool(),
        firstNormalEpoch: reader.u64(),
        firstNormalSlot: reader.u64(),
      });
    case "SysvarFees111111111111111111111111111111111":
      return sysvar("fees", { feeCalculator: { lamportsPerSignature: reader.u64().toString() } });
    case "SysvarRecentB1ockHashes11111111111111111111":
      return sysvar(
        "recentBlockhashes",
        list(() => ({
          blockhash: reader.hash(),
          feeCalculator: { lamportsPerSignature: reader.u64().toString() },
        })),
      );
    case "SysvarRent111111111111111111111111111111111":
      return sysvar("rent", {
        lamportsPerByteYear: reader.u64().toString(),
        exemptionThreshold: reader.f64(),
        burnPercent: reader.u8(),
      });
    case "SysvarS1otHashes111111111111111111111111111":
      return sysvar(
        "slotHashes",
        list(() => ({ slot: reader.u64(), hash: reader.hash() })),
      );
    case "SysvarStakeHistory1111111111111111111111111":
      return sysvar(
        "stakeHistory",
        list(() => ({
          epoch: reader.u64(),
          stakeHistory: { effective: reader.u64(), activating: reader.u64(), deactivating: reader.u64() },
        })),
      );
    case "SysvarLastRestartS1ot1111111111111111111111":
      return sysvar("lastRestartSlot", { lastRestartSlot: reader.u64() });
    case "SysvarEpochRewards1111111111111111111111111":
      return sysvar("epochRewards", {
        distributionStartingBlockHeight: reader.u64(),
        numPartitions: reader.u64(),
        parentBlockhash: reader.hash(),
        totalPoints: reader.u128().toString(),
        totalRewards: reader.u64().toString(),
        distributedRewards: reader.u64().toString(),
        active: reader.bool(),
      });
    default:
      // SlotHistory (a million bits) and unknown sysvars stay binary.
      return undefined;
  }
}

/** parse_stake.rs: StakeStateV2. */
function parseStake(reader: Reader): Parsed {
  const tag = reader.u32();
  if (tag === 0) return typed("stake", "uninitialized");
  if (tag === 3) return typed("stake", "rewardsPool");
  if (tag !== 1 && tag !== 2) return undefined;
  const meta = {
    rentExemptReserve: reader.u64().toString(),
    authorized: { staker: reader.pubkey(), withdrawer: reader.pubkey() },
    lockup: { unixTimestamp: reader.i64(), epoch: reader.u64(), custodian: reader.pubkey() },
  };
  if (tag === 1) return typed("stake", "initialized", { meta, stake: null });
  const delegation = {
    voter: reader.pubkey(),
    stake: reader.u64().toString(),
    activationEpoch: reader.u64().toString(),
    deactivationEpoch: reader.u64().toString(),
    warmupCooldownRate: reader.f64(),
  };
  return typed("stake", "delegated", { meta, stake: { delegation, creditsObserved: reader.u64() } });
}

/** parse_address_lookup_table.rs: ProgramState, then the addresses after the 56-byte meta. */
function parseLookupTable(reader: Reader): Parsed {
  const tag = reader.u32();
  if (tag === 0) return typed("address-lookup-table", "uninitialized");
  if (tag !== 1) return undefined;
  const deactivationSlot = reader.u64();
  const lastExtendedSlot = reader.u64();
  const lastExtendedSlotStartIndex = reader.u8();
  const authority = reader.optionPubkey();
  reader.offset = 56;
  if (reader.left % 32 !== 0) return undefined;
  const addresses = Array.from({ length: reader.left / 32 }, () => reader.pubkey());
  return typed("address-lookup-table", "lookupTable", {
    deactivationSlot: deactivationSlot.toString(),
    lastExtendedSlot: lastExtendedSlot.toString(),
    lastExtendedSlotStartIndex,
    ...(authority === null ? {} : { authority }),
    addresses,
  });
}

/** parse_bpf_loader.rs: UpgradeableLoaderState, the program bytes as base64. */
function parseUpgradeableLoader(reader: Reader): Parsed {
  const loader = (type: string, info?: unknown) => typed("bpf-upgradeable-loader", type, info);
  const bytes = (data: Uint8Array) => [Buffer.from(data).toString("base64"), "base64"];
  switch (reader.u32()) {
    case 0:
      return loader("uninitialized");
    case 1: {
      const authority = reader.optionPubkey();
      reader.offset = 37;
      return loader("buffer", { authority, data: bytes(reader.rest()) });
    }
    case 2:
      return loader("program", { programData: reader.pubkey() });
    case 3: {
      const slot = reader.u64();
      const authority = reader.optionPubkey();
      reader.offset = 45;
      return loader("programData", { slot, authority, data: bytes(reader.rest()) });
    }
    default:
      return undefined;
  }
}

/** A vote account's state as Agave 3.x reads it: every version converted to V4 (SIMD-0185). */
export interface VoteState {
  readonly nodePubkey: string;
  readonly authorizedWithdrawer: string;
  readonly inflationRewardsCollector: string;
  readonly blockRevenueCollector: string;
  readonly inflationRewardsCommissionBps: number;
  readonly blockRevenueCommissionBps: number;
  readonly pendingDelegatorRewards: bigint;
  readonly blsPubkeyCompressed: string | null;
  readonly votes: readonly { latency: number; slot: bigint; confirmationCount: number }[];
  readonly rootSlot: bigint | null;
  readonly authorizedVoters: readonly { epoch: bigint; authorizedVoter: string }[];
  readonly epochCredits: readonly { epoch: bigint; credits: bigint; previousCredits: bigint }[];
  readonly lastTimestamp: { slot: bigint; timestamp: bigint };
}

/** The vote state in a vote account's data (V3 or V4; V3 converted as Agave converts it), or undefined. */
export function voteStateOf(data: Uint8Array, address: string): VoteState | undefined {
  try {
    return readVoteState(new Reader(data), address);
  } catch {
    return undefined;
  }
}

function readVoteState(reader: Reader, address: string | undefined): VoteState | undefined {
  const version = reader.u32();
  if (version !== 2 && version !== 3) return undefined;
  const nodePubkey = reader.pubkey();
  const authorizedWithdrawer = reader.pubkey();
  let v4: Pick<
    VoteState,
    | "inflationRewardsCollector"
    | "blockRevenueCollector"
    | "inflationRewardsCommissionBps"
    | "blockRevenueCommissionBps"
    | "pendingDelegatorRewards"
    | "blsPubkeyCompressed"
  >;
  if (version === 3) {
    const inflationRewardsCollector = reader.pubkey();
    const blockRevenueCollector = reader.pubkey();
    const inflationRewardsCommissionBps = reader.u16();
    const blockRevenueCommissionBps = reader.u16();
    const pendingDelegatorRewards = reader.u64();
    let blsPubkeyCompressed: string | null = null;
    if (reader.bool()) {
      const at = reader.offset;
      reader.offset += 48;
      if (reader.offset > reader.data.length) throw new RangeError("account data too short");
      blsPubkeyCompressed = base58.decode(reader.data.subarray(at, at + 48));
    }
    v4 = {
      inflationRewardsCollector,
      blockRevenueCollector,
      inflationRewardsCommissionBps,
      blockRevenueCommissionBps,
      pendingDelegatorRewards,
      blsPubkeyCompressed,
    };
  } else {
    // V3 as V4: its commission in basis points, rewards to the vote account, revenue to the node.
    if (address === undefined) return undefined;
    v4 = {
      inflationRewardsCollector: address,
      blockRevenueCollector: nodePubkey,
      inflationRewardsCommissionBps: reader.u8() * 100,
      blockRevenueCommissionBps: 10_000,
      pendingDelegatorRewards: 0n,
      blsPubkeyCompressed: null,
    };
  }
  const count = (each: number) => {
    const n = Number(reader.u64());
    if (n * each > reader.left) throw new RangeError("bad length");
    return n;
  };
  const votes = Array.from({ length: count(13) }, () => ({
    latency: reader.u8(),
    slot: reader.u64(),
    confirmationCount: reader.u32(),
  }));
  const rootSlot = reader.bool() ? reader.u64() : null;
  const authorizedVoters = Array.from({ length: count(40) }, () => ({
    epoch: reader.u64(),
    authorizedVoter: reader.pubkey(),
  }));
  if (version === 2) reader.offset += 32 * 48 + 8 + 1; // prior voters: V4 keeps none, Agave shows none
  const epochCredits = Array.from({ length: count(24) }, () => ({
    epoch: reader.u64(),
    credits: reader.u64(),
    previousCredits: reader.u64(),
  }));
  const lastTimestamp = { slot: reader.u64(), timestamp: reader.i64() };
  return {
    nodePubkey,
    authorizedWithdrawer,
    ...v4,
    votes,
    rootSlot,
    authorizedVoters,
    epochCredits,
    lastTimestamp,
  };
}

/** The commission of a vote state, as VoteStateV4::commission: its inflation basis points in percent. */
export function voteCommission(state: VoteState): number {
  return Math.min(255, Math.floor(state.inflationRewardsCommissionBps / 100));
}

/** parse_vote.rs's UiVoteState (Agave 3.1): V4's fields after the older ones, amounts as strings. */
function voteJson(state: VoteState) {
  return {
    nodePubkey: state.nodePubkey,
    authorizedWithdrawer: state.authorizedWithdrawer,
    commission: voteCommission(state),
    votes: state.votes,
    rootSlot: state.rootSlot,
    authorizedVoters: state.authorizedVoters,
    priorVoters: [],
    epochCredits: state.epochCredits.map((c) => ({
      epoch: c.epoch,
      credits: c.credits.toString(),
      previousCredits: c.previousCredits.toString(),
    })),
    lastTimestamp: state.lastTimestamp,
    inflationRewardsCommissionBps: state.inflationRewardsCommissionBps,
    inflationRewardsCollector: state.inflationRewardsCollector,
    blockRevenueCollector: state.blockRevenueCollector,
    blockRevenueCommissionBps: state.blockRevenueCommissionBps,
    pendingDelegatorRewards: state.pendingDelegatorRewards.toString(),
    blsPubkeyCompressed: state.blsPubkeyCompressed,
  };
}
