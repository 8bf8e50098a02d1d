/**
 * The fidelity contract: requests a client suite written for Agave sends, each with the answer an
 * Agave validator of one node gives, taken from Agave's source (cited per test: anza-xyz/agave
 * rpc/src/rpc.rs, rpc-client-api/src/custom_error.rs, account-decoder/src/parse_*.rs). It needs a
 * chain it may write to, so it runs against the local chain only.
 */

import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  type Blockhash,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  type Instruction,
  type KeyPairSigner,
  type Nonce,
  pipe,
  type Signature,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  setTransactionMessageLifetimeUsingDurableNonce,
  signTransactionMessageWithSigners,
} from "@solana/kit";
import {
  getAdvanceNonceAccountInstruction,
  getCreateAccountInstruction,
  getInitializeNonceAccountInstruction,
  getNonceSize,
  getTransferSolInstruction,
} from "@solana-program/system";
import { getInitializeMultisigInstruction, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { getCreateNativeMintInstruction, TOKEN_2022_PROGRAM_ADDRESS } from "@solana-program/token-2022";
import { beforeAll, describe, expect, it } from "vitest";

const SLOTS_PER_EPOCH = 432_000;
const NATIVE_MINT = "So11111111111111111111111111111111111111112";
const NATIVE_MINT_2022 = "9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP";
const STAKE_PROGRAM = address("Stake11111111111111111111111111111111111111");
const VOTE_PROGRAM = address("Vote111111111111111111111111111111111111111");

export function describeAgaveAnswers(name: string, target: () => { url: string }) {
  describe(`Agave's answers: ${name}`, () => {
    let url: string;
    let rpc: ReturnType<typeof createSolanaRpc>;
    let identity: string;
    let id = 0;
    /** The whole response to a request whose body is `text` (so that it can hold integers past 2^53). */
    const rawText = async (text: string) => {
      const response = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: text,
      });
      return (await response.json()) as {
        result?: unknown;
        error?: { code: number; message: string; data?: unknown };
      };
    };
    const call = (method: string, params: unknown[] = []) =>
      rawText(JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }));
    const result = async (method: string, params: unknown[] = []) => {
      const body = await call(method, params);
      expect(body.error, method).toBeUndefined();
      return body.result as never;
    };
    const error = async (method: string, params: unknown[] = []) => {
      const body = await call(method, params);
      expect(body.result, method).toBeUndefined();
      return body.error;
    };
    const confirmedStatus = async (signature: Signature) => {
      const until = Date.now() + 10_000;
      for (;;) {
        const [status] = (await rpc.getSignatureStatuses([signature]).send()).value;
        if (status && status.confirmationStatus !== "processed") return status;
        if (Date.now() > until) throw new Error(`${signature} was not confirmed within 10 s`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const signed = async (
      payer: KeyPairSigner,
      blockhash: { blockhash: Blockhash; lastValidBlockHeight: bigint },
      instructions: readonly Instruction[],
    ) =>
      getBase64EncodedWireTransaction(
        await pipe(
          createTransactionMessage({ version: 0 }),
          (m) => setTransactionMessageFeePayerSigner(payer, m),
          (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
          (m) => appendTransactionMessageInstructions(instructions, m),
          (m) => signTransactionMessageWithSigners(m),
        ),
      );
    const send = (wire: string) =>
      call("sendTransaction", [wire, { encoding: "base64", preflightCommitment: "confirmed" }]);
    const funded = async (sol: bigint) => {
      const payer = await generateKeyPairSigner();
      await confirmedStatus(
        (await result("requestAirdrop", [payer.address, Number(sol * 1_000_000_000n)])) as Signature,
      );
      return payer;
    };
    const latestConfirmed = async () =>
      (await rpc.getLatestBlockhash({ commitment: "confirmed" }).send()).value;

    beforeAll(async () => {
      url = target().url;
      rpc = createSolanaRpc(url);
      identity = ((await result("getIdentity")) as { identity: string }).identity;
    });

    // Issue item 1: a transaction lands in the working slot, after its blockhash's; confirmed banks are frozen.
    describe("the working slot alone takes transactions", () => {
      it("two identical transfers back to back, each with the newest confirmed blockhash, both land (rpc.rs get_latest_blockhash answers the confirmed bank's own blockhash)", async () => {
        const payer = await funded(1n);
        const to = (await generateKeyPairSigner()).address;
        const transfer = [getTransferSolInstruction({ source: payer, destination: to, amount: 1_000_000n })];
        const first = await latestConfirmed();
        const one = await send(await signed(payer, first, transfer));
        expect(one.error).toBeUndefined();
        const landed = await confirmedStatus(one.result as Signature);
        // Landed after the slot whose blockhash it used; once confirmed, a new confirmed blockhash follows.
        const { context } = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
        expect(landed.slot).toBeGreaterThan(BigInt(first.lastValidBlockHeight) - 150n);
        const second = await latestConfirmed();
        expect(second.blockhash).not.toBe(first.blockhash);
        expect(context.slot).toBeGreaterThanOrEqual(landed.slot);
        const two = await send(await signed(payer, second, transfer));
        expect(two.error).toBeUndefined();
        expect((await confirmedStatus(two.result as Signature)).err).toBeNull();
        expect((await rpc.getBalance(to, { commitment: "confirmed" }).send()).value).toBe(2_000_000n);
      });

      it("a nonce account created and then advanced with the newest confirmed blockhash advances (system program: once per slot)", async () => {
        const payer = await funded(1n);
        const nonce = await generateKeyPairSigner();
        const space = BigInt(getNonceSize());
        const rent = await rpc.getMinimumBalanceForRentExemption(space).send();
        const create = await send(
          await signed(payer, await latestConfirmed(), [
            getCreateAccountInstruction({
              payer,
              newAccount: nonce,
              lamports: rent,
              space,
              programAddress: address("11111111111111111111111111111111"),
            }),
            getInitializeNonceAccountInstruction({
              nonceAccount: nonce.address,
              nonceAuthority: payer.address,
            }),
          ]),
        );
        expect(create.error).toBeUndefined();
        expect((await confirmedStatus(create.result as Signature)).err).toBeNull();
        const advance = await send(
          await signed(payer, await latestConfirmed(), [
            getAdvanceNonceAccountInstruction({ nonceAccount: nonce.address, nonceAuthority: payer }),
          ]),
        );
        expect(advance.error).toBeUndefined();
        expect((await confirmedStatus(advance.result as Signature)).err).toBeNull();
        // A transaction whose lifetime is the nonce (Agave's check_age: the nonce account's stored
        // blockhash) lands, advancing it; the same bytes again find the nonce moved on.
        const { value } = (await result("getAccountInfo", [nonce.address, { encoding: "jsonParsed" }])) as {
          value: { data: { parsed: { info: { blockhash: string } } } };
        };
        const durable = getBase64EncodedWireTransaction(
          await pipe(
            createTransactionMessage({ version: 0 }),
            (m) => setTransactionMessageFeePayerSigner(payer, m),
            (m) =>
              setTransactionMessageLifetimeUsingDurableNonce(
                {
                  nonce: value.data.parsed.info.blockhash as Nonce,
                  nonceAccountAddress: nonce.address,
                  nonceAuthorityAddress: payer.address,
                },
                m,
              ),
            (m) =>
              appendTransactionMessageInstructions(
                [getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n })],
                m,
              ),
            (m) => signTransactionMessageWithSigners(m),
          ),
        );
        // Its message has a fee (get_fee_for_message loads the nonce account for a durable nonce).
        const message = Buffer.from(durable, "base64").subarray(1 + 64);
        expect(
          ((await result("getFeeForMessage", [message.toString("base64")])) as { value: unknown }).value,
        ).toBe(5000);
        const landed = await send(durable);
        expect(landed.error).toBeUndefined();
        expect((await confirmedStatus(landed.result as Signature)).err).toBeNull();
        expect((await send(durable)).error).toMatchObject({
          code: -32002,
          message: "Transaction simulation failed: Blockhash not found",
        });
      });

      it("a block served at confirmed never gains a transaction (the confirmed bank is frozen)", async () => {
        const payer = await funded(1n);
        const latest = await rpc.getLatestBlockhash({ commitment: "confirmed" }).send();
        const slot = Number(latest.context.slot);
        const before = await result("getBlock", [
          slot,
          {
            commitment: "confirmed",
            transactionDetails: "signatures",
            maxSupportedTransactionVersion: 0,
            rewards: false,
          },
        ]);
        const sent = await send(
          await signed(payer, latest.value, [
            getTransferSolInstruction({ source: payer, destination: payer.address, amount: 1n }),
          ]),
        );
        const status = await confirmedStatus(sent.result as Signature);
        expect(Number(status.slot)).toBeGreaterThan(slot);
        expect(
          await result("getBlock", [
            slot,
            {
              commitment: "confirmed",
              transactionDetails: "signatures",
              maxSupportedTransactionVersion: 0,
              rewards: false,
            },
          ]),
        ).toEqual(before);
        // The block it used the blockhash of is that blockhash's block (get_block's blockhash).
        expect((before as { blockhash: string }).blockhash).toBe(latest.value.blockhash);
      });

      it("processed names the working slot, confirmed the one before it, finalized 32 before that", async () => {
        // Read in this order, a slot passing between reads can only widen the gaps.
        const finalized = await rpc.getSlot({ commitment: "finalized" }).send();
        const confirmed = await rpc.getSlot({ commitment: "confirmed" }).send();
        const processed = await rpc.getSlot({ commitment: "processed" }).send();
        expect(Number(processed) - Number(confirmed)).toBeGreaterThanOrEqual(1);
        expect(Number(confirmed) - Number(finalized)).toBeGreaterThanOrEqual(32);
        // The working slot is no block yet at confirmed (rpc.rs get_block: BlockNotAvailable).
        const working = Number(await rpc.getSlot({ commitment: "processed" }).send()) + 5;
        expect(await error("getBlock", [working, { commitment: "confirmed" }])).toEqual({
          code: -32004,
          message: `Block not available for slot ${working}`,
        });
      });
    });

    // Issue item 4: the methods a one-validator cluster serves (rpc.rs, the Minimal, BankData, AccountsData, AccountsScan and Full traits).
    describe("a one-validator cluster's methods", () => {
      it("getBlocksWithLimit: consecutive slots from the start; Limit too large; processed refused (rpc.rs get_blocks_with_limit)", async () => {
        const first = Number(await rpc.getFirstAvailableBlock().send());
        expect(await rpc.getBlocksWithLimit(BigInt(first), 5).send()).toEqual(
          [0, 1, 2, 3, 4].map((i) => BigInt(first + i)),
        );
        expect(await result("getBlocksWithLimit", [first, 0])).toEqual([]);
        expect(await error("getBlocksWithLimit", [first, 500_001])).toEqual({
          code: -32602,
          message: "Limit too large; max 500000",
        });
        expect(await error("getBlocksWithLimit", [first, 5, { commitment: "processed" }])).toEqual({
          code: -32602,
          message: "Method does not support commitment below `confirmed`",
        });
        const confirmed = Number(await rpc.getSlot({ commitment: "confirmed" }).send());
        const tail = (await result("getBlocksWithLimit", [
          confirmed - 2,
          10,
          { commitment: "confirmed" },
        ])) as number[];
        expect(tail.slice(0, 3)).toEqual([confirmed - 2, confirmed - 1, confirmed]);
      });

      it("getTransactionCount: the bank's count, as getEpochInfo's (rpc.rs get_transaction_count)", async () => {
        const count = await rpc.getTransactionCount({ commitment: "finalized" }).send();
        const info = await rpc.getEpochInfo({ commitment: "finalized" }).send();
        expect(count).toBeGreaterThan(0n);
        expect(info.transactionCount).toBeGreaterThanOrEqual(count);
      });

      it("getVoteAccounts: the bank's vote accounts, none here; a bad votePubkey is refused (rpc.rs get_vote_accounts)", async () => {
        expect(await rpc.getVoteAccounts().send()).toEqual({ current: [], delinquent: [] });
        expect(await error("getVoteAccounts", [{ votePubkey: "nope" }])).toEqual({
          code: -32602,
          message: "Invalid param: WrongSize",
        });
      });

      it("getLeaderSchedule, getSlotLeader, getSlotLeaders: the one node leads every slot (rpc.rs get_leader_schedule, get_slot_leaders)", async () => {
        const schedule = (await result("getLeaderSchedule")) as Record<string, number[]>;
        expect(Object.keys(schedule)).toEqual([identity]);
        expect(schedule[identity]?.length).toBe(SLOTS_PER_EPOCH);
        expect(schedule[identity]?.slice(0, 3)).toEqual([0, 1, 2]);
        expect(await result("getLeaderSchedule", [null, { identity: NATIVE_MINT }])).toEqual({});
        // Known for the bank's epoch and the next; later ones are not (null).
        expect(await result("getLeaderSchedule", [SLOTS_PER_EPOCH * 10])).toBeNull();
        expect(await rpc.getSlotLeader().send()).toBe(identity);
        const slot = await rpc.getSlot().send();
        expect(await rpc.getSlotLeaders(slot, 3).send()).toEqual([identity, identity, identity]);
        expect(await error("getSlotLeaders", [Number(slot), 5001])).toEqual({
          code: -32602,
          message: "Invalid limit; max 5000",
        });
        expect(await error("getSlotLeaders", [SLOTS_PER_EPOCH * 10, 1])).toEqual({
          code: -32602,
          message: "Invalid slot range: leader schedule for epoch 10 is unavailable",
        });
      });

      it("getBlockProduction: every leader slot a block, this epoch so far; range errors in Agave's words (rpc.rs get_block_production)", async () => {
        const { context, value } = await rpc.getBlockProduction().send();
        const slots = context.slot - (context.slot % BigInt(SLOTS_PER_EPOCH));
        expect(value).toEqual({
          byIdentity: { [identity]: [context.slot - slots + 1n, context.slot - slots + 1n] },
          range: { firstSlot: slots, lastSlot: context.slot },
        });
        expect(await error("getBlockProduction", [{ range: { firstSlot: 10, lastSlot: 5 } }])).toEqual({
          code: -32602,
          message: "lastSlot, 5, cannot be less than firstSlot, 10",
        });
        const far = Number(context.slot) + 1000;
        expect(
          await error("getBlockProduction", [
            { commitment: "confirmed", range: { firstSlot: 10, lastSlot: far } },
          ]),
        ).toMatchObject({
          code: -32602,
          message: expect.stringMatching(new RegExp(`^lastSlot, ${far}, is too large; max \\d+$`)),
        });
        expect(
          (await rpc.getBlockProduction({ identity: address(NATIVE_MINT) }).send()).value.byIdentity,
        ).toEqual({});
      });

      it("getBlockCommitment: no stake votes on this node (rpc.rs get_block_commitment)", async () => {
        const slot = await rpc.getSlot().send();
        expect(await rpc.getBlockCommitment(slot).send()).toEqual({ commitment: null, totalStake: 0n });
      });

      it("getRecentPerformanceSamples: a sample a minute, newest first; at most 720 (rpc.rs get_recent_performance_samples)", async () => {
        const samples = await rpc.getRecentPerformanceSamples(3).send();
        expect(samples).toHaveLength(3);
        for (const sample of samples) {
          expect(sample).toEqual({
            slot: expect.any(BigInt),
            numSlots: 150n,
            numTransactions: expect.any(BigInt),
            numNonVoteTransactions: sample.numTransactions,
            samplePeriodSecs: 60,
          });
        }
        expect((samples[0]?.slot ?? 0n) - (samples[1]?.slot ?? 0n)).toBe(150n);
        expect(await error("getRecentPerformanceSamples", [721])).toEqual({
          code: -32602,
          message: "Invalid limit; max 720",
        });
      });

      it("getLargestAccounts: the 20 largest, largest first; none non-circulating (rpc.rs get_largest_accounts)", async () => {
        const { value } = await rpc.getLargestAccounts().send();
        expect(value).toHaveLength(20);
        const lamports = value.map((a) => a.lamports);
        expect([...lamports].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(lamports);
        expect((await rpc.getLargestAccounts({ filter: "nonCirculating" }).send()).value).toEqual([]);
        expect(await error("getLargestAccounts", [{ filter: "big" }])).toEqual({
          code: -32602,
          message: "Invalid params: unknown variant `big`, expected `circulating` or `nonCirculating`.",
        });
      });

      it("getStakeMinimumDelegation: what the stake program answers GetMinimumDelegation with (rpc.rs get_stake_minimum_delegation)", async () => {
        const { value } = await rpc.getStakeMinimumDelegation().send();
        const payer = await funded(1n);
        const wire = await signed(payer, await latestConfirmed(), [
          { programAddress: STAKE_PROGRAM, accounts: [], data: Uint8Array.of(13, 0, 0, 0) },
        ]);
        const simulated = (await result("simulateTransaction", [wire, { encoding: "base64" }])) as {
          value: { returnData: { data: [string, string] } };
        };
        expect(value).toBe(Buffer.from(simulated.value.returnData.data[0], "base64").readBigUInt64LE(0));
        expect(value).toBe(1_000_000_000n);
      });

      it("getHighestSnapshotSlot, getMaxRetransmitSlot, getMaxShredInsertSlot (rpc.rs; custom_error.rs NoSnapshot -32008)", async () => {
        expect(await error("getHighestSnapshotSlot")).toEqual({ code: -32008, message: "No snapshot" });
        const slot = await rpc.getSlot({ commitment: "processed" }).send();
        expect(await rpc.getMaxRetransmitSlot().send()).toBeGreaterThanOrEqual(slot);
        expect(await rpc.getMaxShredInsertSlot().send()).toBeGreaterThanOrEqual(slot);
        expect(await error("getMaxRetransmitSlot", [1])).toMatchObject({
          code: -32602,
          message: "Invalid parameters: No parameters were expected",
        });
      });

      it("getInflationGovernor, getInflationRate: Inflation::full() with every feature active (rpc.rs get_inflation_governor, get_inflation_rate)", async () => {
        expect(await result("getInflationGovernor")).toEqual({
          initial: 0.08,
          terminal: 0.015,
          taper: 0.15,
          foundation: 0,
          foundationTerm: 0,
        });
        const { epoch } = await rpc.getEpochInfo().send();
        const rate = await rpc.getInflationRate().send();
        expect(rate.epoch).toBe(epoch);
        expect(rate.foundation).toBe(0);
        expect(rate.validator).toBe(rate.total);
        expect(rate.total).toBeLessThanOrEqual(0.08);
        expect(rate.total).toBeGreaterThan(0.079);
      });

      it("getInflationReward: the epoch boundary's block, not yet there in the first epoch (rpc.rs get_inflation_reward)", async () => {
        const { epoch } = await rpc.getEpochInfo().send();
        const boundary = (epoch === 0n ? 1n : epoch) * BigInt(SLOTS_PER_EPOCH);
        if (epoch === 0n) {
          expect(await error("getInflationReward", [[NATIVE_MINT]])).toEqual({
            code: -32004,
            message: `Block not available for slot ${boundary}`,
          });
        } else {
          expect(await result("getInflationReward", [[NATIVE_MINT]])).toEqual([null]);
        }
        expect(await error("getInflationReward", [["nope"]])).toEqual({
          code: -32602,
          message: "Invalid param: WrongSize",
        });
      });
    });

    // Issue item 5: jsonParsed beyond mints and token accounts (account-decoder/src/parse_account_data.rs and parse_*.rs).
    describe("jsonParsed accounts as Agave's account decoder parses them", () => {
      const parsedData = async (address: string) =>
        (
          (await result("getAccountInfo", [address, { encoding: "jsonParsed" }])) as {
            value: { data: unknown };
          }
        ).value.data as {
          program: string;
          parsed: { type: string; info?: Record<string, unknown> };
          space: number;
        };

      it("an SPL Token multisig (parse_token.rs: UiMultisig, unused signer slots left out)", async () => {
        const payer = await funded(1n);
        const multisig = await generateKeyPairSigner();
        const signers = await Promise.all([1, 2, 3].map(async () => (await generateKeyPairSigner()).address));
        const rent = await rpc.getMinimumBalanceForRentExemption(355n).send();
        const sent = await send(
          await signed(payer, await latestConfirmed(), [
            getCreateAccountInstruction({
              payer,
              newAccount: multisig,
              lamports: rent,
              space: 355,
              programAddress: TOKEN_PROGRAM_ADDRESS,
            }),
            getInitializeMultisigInstruction({ multisig: multisig.address, m: 2, signers }),
          ]),
        );
        expect(sent.error).toBeUndefined();
        expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
        expect(await parsedData(multisig.address)).toEqual({
          program: "spl-token",
          parsed: {
            type: "multisig",
            info: { numRequiredSigners: 2, numValidSigners: 3, isInitialized: true, signers },
          },
          space: 355,
        });
      });

      it("a nonce account (parse_nonce.rs: initialized, feeCalculator as a string amount)", async () => {
        const payer = await funded(1n);
        const nonce = await generateKeyPairSigner();
        const space = BigInt(getNonceSize());
        const rent = await rpc.getMinimumBalanceForRentExemption(space).send();
        const sent = await send(
          await signed(payer, await latestConfirmed(), [
            getCreateAccountInstruction({
              payer,
              newAccount: nonce,
              lamports: rent,
              space,
              programAddress: address("11111111111111111111111111111111"),
            }),
            getInitializeNonceAccountInstruction({
              nonceAccount: nonce.address,
              nonceAuthority: payer.address,
            }),
          ]),
        );
        expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
        expect(await parsedData(nonce.address)).toEqual({
          program: "nonce",
          parsed: {
            type: "initialized",
            info: {
              authority: payer.address,
              blockhash: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
              feeCalculator: { lamportsPerSignature: "5000" },
            },
          },
          space: 80,
        });
        // A plain wallet is no nonce: its empty data stays binary.
        expect(await parsedData(payer.address)).toEqual(["", "base64"]);
      });

      it("sysvars (parse_sysvar.rs: clock, rent, epochSchedule, stakeHistory by their address)", async () => {
        const clock = await parsedData("SysvarC1ock11111111111111111111111111111111");
        expect(clock).toMatchObject({ program: "sysvar", parsed: { type: "clock" }, space: 40 });
        const slot = Number(await rpc.getSlot({ commitment: "processed" }).send());
        expect(Math.abs((clock.parsed.info?.slot as number) - slot)).toBeLessThanOrEqual(2);
        expect(Object.keys(clock.parsed.info ?? {})).toEqual([
          "slot",
          "epochStartTimestamp",
          "epoch",
          "leaderScheduleEpoch",
          "unixTimestamp",
        ]);
        // The runtime's Rent (exemption threshold 1 with the doubled byte-year price, as Agave 3.x has it
        // once rent exemption's threshold is deprecated): the same as getMinimumBalanceForRentExemption.
        const rent = await parsedData("SysvarRent111111111111111111111111111111111");
        expect(rent).toEqual({
          program: "sysvar",
          parsed: {
            type: "rent",
            info: {
              lamportsPerByteYear: expect.stringMatching(/^\d+$/),
              exemptionThreshold: expect.any(Number),
              burnPercent: 50,
            },
          },
          space: 17,
        });
        const { lamportsPerByteYear, exemptionThreshold } = rent.parsed.info as {
          lamportsPerByteYear: string;
          exemptionThreshold: number;
        };
        expect(BigInt(Math.floor((128 + 17) * Number(lamportsPerByteYear) * exemptionThreshold))).toBe(
          await rpc.getMinimumBalanceForRentExemption(17n).send(),
        );
        expect((await parsedData("SysvarEpochSchedu1e111111111111111111111111")).parsed).toEqual({
          type: "epochSchedule",
          info: {
            slotsPerEpoch: SLOTS_PER_EPOCH,
            leaderScheduleSlotOffset: SLOTS_PER_EPOCH,
            warmup: false,
            firstNormalEpoch: 0,
            firstNormalSlot: 0,
          },
        });
        expect((await parsedData("SysvarStakeHistory1111111111111111111111111")).parsed).toEqual({
          type: "stakeHistory",
          info: [],
        });
      });

      it("a stake account (parse_stake.rs: initialized, its meta, stake null)", async () => {
        const payer = await funded(1n);
        const stake = await generateKeyPairSigner();
        const rent = await rpc.getMinimumBalanceForRentExemption(200n).send();
        // StakeInstruction::Initialize(Authorized, Lockup): staker and withdrawer, then a zero lockup.
        const data = new Uint8Array(4 + 64 + 48);
        const staker = getAddressEncoder().encode(payer.address);
        data.set(staker, 4);
        data.set(staker, 36);
        const sent = await send(
          await signed(payer, await latestConfirmed(), [
            getCreateAccountInstruction({
              payer,
              newAccount: stake,
              lamports: rent,
              space: 200,
              programAddress: STAKE_PROGRAM,
            }),
            {
              programAddress: STAKE_PROGRAM,
              accounts: [
                { address: stake.address, role: AccountRole.WRITABLE },
                {
                  address: address("SysvarRent111111111111111111111111111111111"),
                  role: AccountRole.READONLY,
                },
              ],
              data,
            },
          ]),
        );
        expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
        expect(await parsedData(stake.address)).toEqual({
          program: "stake",
          parsed: {
            type: "initialized",
            info: {
              meta: {
                rentExemptReserve: rent.toString(),
                authorized: { staker: payer.address, withdrawer: payer.address },
                lockup: { unixTimestamp: 0, epoch: 0, custodian: "11111111111111111111111111111111" },
              },
              stake: null,
            },
          },
          space: 200,
        });
      });

      it("an address lookup table (parse_address_lookup_table.rs: amounts as strings, the addresses after the meta)", async () => {
        const table = (await generateKeyPairSigner()).address;
        const authority = (await generateKeyPairSigner()).address;
        const entries = [NATIVE_MINT, NATIVE_MINT_2022];
        const bytes = new Uint8Array(56 + 32 * entries.length);
        const view = new DataView(bytes.buffer);
        view.setUint32(0, 1, true);
        view.setBigUint64(4, (1n << 64n) - 1n, true);
        view.setBigUint64(12, 42n, true);
        bytes[20] = 0;
        bytes[21] = 1;
        bytes.set(getAddressEncoder().encode(address(authority)), 22);
        entries.forEach((entry, i) => {
          bytes.set(getAddressEncoder().encode(address(entry)), 56 + 32 * i);
        });
        await result("surfnet_setAccount", [
          table,
          {
            lamports: 10_000_000,
            owner: "AddressLookupTab1e1111111111111111111111111",
            data: Buffer.from(bytes).toString("hex"),
          },
        ]);
        expect(await parsedData(table)).toEqual({
          program: "address-lookup-table",
          parsed: {
            type: "lookupTable",
            info: {
              deactivationSlot: "18446744073709551615",
              lastExtendedSlot: "42",
              lastExtendedSlotStartIndex: 0,
              authority,
              addresses: entries,
            },
          },
          space: bytes.length,
        });
      });

      it("a vote account (parse_vote.rs: Agave 3.1's UiVoteState, V4), and getVoteAccounts' delinquent list (rpc.rs get_vote_accounts)", async () => {
        const payer = await funded(1n);
        const vote = await generateKeyPairSigner();
        const node = await generateKeyPairSigner();
        const rent = await rpc.getMinimumBalanceForRentExemption(3762n).send();
        // VoteInstruction::InitializeAccount(VoteInit {node, authorized voter, authorized withdrawer, commission}).
        const data = new Uint8Array(4 + 32 * 3 + 1);
        data.set(getAddressEncoder().encode(node.address), 4);
        data.set(getAddressEncoder().encode(payer.address), 36);
        data.set(getAddressEncoder().encode(payer.address), 68);
        data[100] = 7;
        const sent = await send(
          await signed(payer, await latestConfirmed(), [
            getCreateAccountInstruction({
              payer,
              newAccount: vote,
              lamports: rent,
              space: 3762,
              programAddress: VOTE_PROGRAM,
            }),
            {
              programAddress: VOTE_PROGRAM,
              accounts: [
                { address: vote.address, role: AccountRole.WRITABLE },
                {
                  address: address("SysvarRent111111111111111111111111111111111"),
                  role: AccountRole.READONLY,
                },
                {
                  address: address("SysvarC1ock11111111111111111111111111111111"),
                  role: AccountRole.READONLY,
                },
                { address: node.address, role: AccountRole.READONLY_SIGNER, signer: node } as never,
              ],
              data,
            },
          ]),
        );
        expect(sent.error).toBeUndefined();
        expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
        const { epoch } = await rpc.getEpochInfo().send();
        expect(await parsedData(vote.address)).toEqual({
          program: "vote",
          parsed: {
            type: "vote",
            info: {
              nodePubkey: node.address,
              authorizedWithdrawer: payer.address,
              commission: 7,
              votes: [],
              rootSlot: null,
              authorizedVoters: [{ epoch: Number(epoch), authorizedVoter: payer.address }],
              priorVoters: [],
              epochCredits: [],
              lastTimestamp: { slot: 0, timestamp: 0 },
              inflationRewardsCommissionBps: 700,
              inflationRewardsCollector: vote.address,
              blockRevenueCollector: node.address,
              blockRevenueCommissionBps: 10_000,
              pendingDelegatorRewards: "0",
              blsPubkeyCompressed: null,
            },
          },
          space: 3762,
        });
        // It never voted and nothing is staked to it: delinquent, and left out unless asked for.
        expect(await result("getVoteAccounts", [{ votePubkey: vote.address }])).toEqual({
          current: [],
          delinquent: [],
        });
        expect(
          await result("getVoteAccounts", [{ votePubkey: vote.address, keepUnstakedDelinquents: true }]),
        ).toEqual({
          current: [],
          delinquent: [
            {
              votePubkey: vote.address,
              nodePubkey: node.address,
              activatedStake: 0,
              commission: 7,
              epochVoteAccount: false,
              epochCredits: [],
              lastVote: 0,
              rootSlot: 0,
            },
          ],
        });
      });

      it("the upgradeable loader's program and program data (parse_bpf_loader.rs)", async () => {
        const program = await parsedData(STAKE_PROGRAM);
        expect(program).toEqual({
          program: "bpf-upgradeable-loader",
          parsed: { type: "program", info: { programData: expect.any(String) } },
          space: 36,
        });
        const programData = await parsedData(program.parsed.info?.programData as string);
        expect(programData).toMatchObject({
          program: "bpf-upgradeable-loader",
          parsed: {
            type: "programData",
            info: { slot: expect.any(Number), data: [expect.any(String), "base64"] },
          },
        });
        expect(programData.parsed.info).toHaveProperty("authority");
      });
    });

    // Issue item 7: u64 params read exactly (rpc.rs takes Slot = u64; serde reads it without a double).
    it("u64 slots past 2^53 are answered with the slot asked for (rpc.rs get_block_time, get_block: BlockNotAvailable)", async () => {
      const big = "9223372036854775807";
      expect(
        (await rawText(`{"jsonrpc":"2.0","id":1,"method":"getBlockTime","params":[${big}]}`)).error,
      ).toEqual({
        code: -32004,
        message: `Block not available for slot ${big}`,
      });
      expect(
        (
          await rawText(
            `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[${big},{"commitment":"confirmed"}]}`,
          )
        ).error,
      ).toEqual({
        code: -32004,
        message: `Block not available for slot ${big}`,
      });
      expect(
        (await rawText(`{"jsonrpc":"2.0","id":1,"method":"getBlocksWithLimit","params":[${big},5]}`)).result,
      ).toEqual([]);
    });

    // Issue item 8: surfpool applies rentEpoch (surfpool's surfnet_setAccount, AccountUpdate.rent_epoch).
    it("surfnet_setAccount applies rentEpoch, and reads it back", async () => {
      const target = (await generateKeyPairSigner()).address;
      for (const rentEpoch of [0, 5]) {
        await result("surfnet_setAccount", [target, { lamports: 1_000_000, rentEpoch }]);
        const { value } = (await result("getAccountInfo", [target, { encoding: "base64" }])) as {
          value: { rentEpoch: number };
        };
        expect(value.rentEpoch).toBe(rentEpoch);
      }
      // Unset, it stays as it was.
      await result("surfnet_setAccount", [target, { lamports: 2_000_000 }]);
      expect(
        (
          (await result("getAccountInfo", [target, { encoding: "base64" }])) as {
            value: { rentEpoch: number };
          }
        ).value.rentEpoch,
      ).toBe(5);
      // A transaction that writes it leaves it rent-exempt's (u64::MAX), as the runtime does.
      const payer = await funded(1n);
      const sent = await send(
        await signed(payer, await latestConfirmed(), [
          getTransferSolInstruction({ source: payer, destination: address(target), amount: 1n }),
        ]),
      );
      expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
      const written = await rawText(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "getAccountInfo",
          params: [target, { encoding: "base64" }],
        }),
      );
      expect((written.result as { value: { rentEpoch: number } }).value.rentEpoch).toBe(2 ** 64);
    });

    // Issue item 3: genesis (solana-genesis / the test validator add the native mint with 1 SOL; Token-2022's is made by CreateNativeMint).
    it("genesis: the native mint holds 1 SOL; Token-2022's native mint is absent until created", async () => {
      const mint = (await result("getAccountInfo", [NATIVE_MINT, { encoding: "base64" }])) as {
        value: { lamports: number };
      };
      expect(mint.value.lamports).toBe(1_000_000_000);
      expect(((await result("getAccountInfo", [NATIVE_MINT_2022])) as { value: unknown }).value).toBeNull();
      const payer = await funded(1n);
      const sent = await send(
        await signed(payer, await latestConfirmed(), [
          getCreateNativeMintInstruction({ payer, nativeMint: address(NATIVE_MINT_2022) }),
        ]),
      );
      expect(sent.error).toBeUndefined();
      expect((await confirmedStatus(sent.result as Signature)).err).toBeNull();
      const created = (await result("getAccountInfo", [NATIVE_MINT_2022, { encoding: "jsonParsed" }])) as {
        value: { owner: string; data: { parsed: { type: string; info: { decimals: number } } } };
      };
      expect(created.value.owner).toBe(TOKEN_2022_PROGRAM_ADDRESS);
      expect(created.value.data.parsed).toMatchObject({ type: "mint", info: { decimals: 9 } });
    });

    // Issue item 6: a fee payer that cannot pay is refused before the transaction is processed (rpc.rs send_transaction's
    // preflight: TransactionSimulationResult of an unprocessed transaction has no fee and loaded 0 bytes).
    it("preflight failure data: fee null and loadedAccountsDataSize 0 for a missing fee payer and for InsufficientFundsForFee", async () => {
      const blockhash = await latestConfirmed();
      const missing = await generateKeyPairSigner();
      const transfer = (from: KeyPairSigner) => [
        getTransferSolInstruction({ source: from, destination: from.address, amount: 1n }),
      ];
      const refused = await send(await signed(missing, blockhash, transfer(missing)));
      expect(refused.error).toMatchObject({
        code: -32002,
        message:
          "Transaction simulation failed: Attempt to debit an account but found no record of a prior credit.",
        data: { err: "AccountNotFound", fee: null, loadedAccountsDataSize: 0, unitsConsumed: 0 },
      });
      const poor = await generateKeyPairSigner();
      await result("surfnet_setAccount", [poor.address, { lamports: 1 }]);
      const poorRefused = await send(await signed(poor, blockhash, transfer(poor)));
      expect(poorRefused.error).toMatchObject({
        code: -32002,
        message: "Transaction simulation failed: Insufficient funds for fee",
        data: { err: "InsufficientFundsForFee", fee: null, loadedAccountsDataSize: 0 },
      });
    });
  });
}
