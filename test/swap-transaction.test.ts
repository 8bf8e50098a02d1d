/**
 * The swap transaction as the builder lays it out, decoded back with kit: the run's own
 * instructions first (budget, the owner's output and the taker's input accounts, the delegate's
 * one transfer to the taker), the route, the close of the taker's account to the fee payer, the
 * memo; the fee payer, the delegate and the run's taker as its only signers, all signing; lookup
 * tables used. Then what vetRoute drops and refuses. Called directly: the flow on chain is
 * test/swap-agent.test.ts and test/hostile-swap-routes.test.ts.
 */
import { createPublicKey, randomBytes, verify } from "node:crypto";
import {
  type Address,
  getAddressEncoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import { ASSOCIATED_TOKEN_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { describe, expect, it } from "vitest";
import { signingKeyFromSeed } from "../src/chain/ed25519-key.ts";
import { endStateProblem, tokenFieldsOf, vetRoute } from "../src/chain/swap-route.ts";
import {
  COMPUTE_BUDGET_PROGRAM,
  MEMO_PROGRAM,
  type PlainInstruction,
  resignedSwap,
  swapAccountsOf,
  swapTransaction,
} from "../src/chain/swap-transaction.ts";
import { associatedTokenAccount } from "../src/chain/token-transactions.ts";

const key = () => signingKeyFromSeed(randomBytes(32));
const address = () => key().address;
const USDC = {
  mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
  program: "spl-token",
  decimals: 6,
} as const;
const JUP = {
  mint: "JUPyiwrYJFskUPiHa7hkeR8VUtAeFoSYbKedZNsDvCN",
  program: "spl-token",
  decimals: 6,
} as const;

const createAta = (payer: string, ata: string, owner: string, mint: string): PlainInstruction => ({
  programAddress: ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  accounts: [
    { address: payer, signer: true, writable: true },
    { address: ata, signer: false, writable: true },
    { address: owner, signer: false, writable: false },
    { address: mint, signer: false, writable: false },
  ],
  data: new Uint8Array([1]),
});

describe("a swap's transaction", () => {
  it("lays out the run's instructions around the route, and has three signers", async () => {
    const feePayer = key();
    const delegate = key();
    const taker = key();
    const owner = address();
    const accounts = await swapAccountsOf(owner, taker.address, USDC, JUP, associatedTokenAccount);
    const vault = address();
    const table = address();
    const swap: PlainInstruction = {
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: [
        { address: accounts.takerInput, signer: false, writable: true },
        { address: USDC.mint, signer: false, writable: false },
        { address: vault, signer: false, writable: true },
        { address: taker.address, signer: true, writable: false },
      ],
      data: new Uint8Array([12, 1, 0, 0, 0, 0, 0, 0, 0, 6]),
    };
    const built = await swapTransaction({
      feePayer,
      delegate,
      taker,
      owner,
      input: USDC,
      output: JUP,
      amount: 1_500_000n,
      accounts,
      computeUnitLimit: 200_000,
      computeUnitPrice: 1_000n,
      route: [swap],
      lookupTables: { [table]: [vault] },
      lifetime: { blockhash: address(), lastValidBlockHeight: 100n },
      memo: "token-agent-service run test",
    });
    expect(built.signers.slice().sort()).toEqual([feePayer.address, delegate.address, taker.address].sort());
    expect(built.signers[0]).toBe(feePayer.address);
    // Writable: the fee payer, the owner's input, the taker's, and the vault through the table. Not
    // the owner's output, which this route does not write: the transaction never creates it (the
    // wallet's approval does), and the executor adds it to the end-state check itself.
    expect(built.writable).toEqual(
      expect.arrayContaining([feePayer.address, accounts.ownerInput, accounts.takerInput, vault]),
    );
    expect(built.writable).not.toContain(accounts.ownerOutput);
    expect(built.writable).not.toContain(delegate.address);
    expect(built.size).toBeLessThanOrEqual(1232);
    const transaction = getTransactionDecoder().decode(getBase64Encoder().encode(built.transaction));
    expect(Object.values(transaction.signatures).every((s) => s !== null)).toBe(true);
    const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes) as unknown as {
      staticAccounts: string[];
      instructions: { programAddressIndex: number }[];
      addressTableLookups?: { lookupTableAddress: string }[];
    };
    const keys = message.staticAccounts;
    const programs = message.instructions.map((ix) => keys[ix.programAddressIndex]);
    expect(programs).toEqual([
      COMPUTE_BUDGET_PROGRAM,
      COMPUTE_BUDGET_PROGRAM,
      ASSOCIATED_TOKEN_PROGRAM_ADDRESS, // the taker's input account
      TOKEN_PROGRAM_ADDRESS, // transferChecked owner → taker, signed by the delegate
      TOKEN_PROGRAM_ADDRESS, // the route
      TOKEN_PROGRAM_ADDRESS, // the taker's account closed, its rent to the fee payer
      MEMO_PROGRAM,
    ]);
    // The vault comes through the lookup table, not as a static key.
    expect(keys).not.toContain(vault);
    expect(message.addressTableLookups?.map((l) => l.lookupTableAddress)).toEqual([table]);
  });

  it("signs the trial's own message with a new budget and lifetime, as a fresh build would be", async () => {
    const feePayer = key();
    const delegate = key();
    const taker = key();
    const owner = address();
    const accounts = await swapAccountsOf(owner, taker.address, USDC, JUP, associatedTokenAccount);
    const vault = address();
    const table = address();
    const route: PlainInstruction[] = [
      {
        programAddress: TOKEN_PROGRAM_ADDRESS,
        accounts: [
          { address: accounts.takerInput, signer: false, writable: true },
          { address: vault, signer: false, writable: true },
          { address: taker.address, signer: true, writable: false },
        ],
        data: new Uint8Array([3, 1, 0, 0, 0, 0, 0, 0, 0]),
      },
    ];
    const plan = {
      feePayer,
      delegate,
      taker,
      owner,
      input: USDC,
      output: JUP,
      amount: 1_500_000n,
      accounts,
      route,
      lookupTables: { [table]: [vault] },
      memo: "token-agent-service run resign",
    };
    const trial = await swapTransaction({
      ...plan,
      computeUnitLimit: 1_400_000,
      computeUnitPrice: 7n,
      lifetime: { blockhash: "11111111111111111111111111111111", lastValidBlockHeight: 0n },
      sign: false,
    });
    // The trial is unsigned: simulations check no signatures.
    const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(trial.transaction));
    expect(Object.values(unsigned.signatures).every((s) => s === null || s.every((b) => b === 0))).toBe(true);

    const lifetime = { blockhash: address(), lastValidBlockHeight: 500n };
    const resigned = resignedSwap(
      trial.compiled,
      { computeUnitLimit: 123_456, computeUnitPrice: 987_654_321n, lifetime },
      [feePayer, delegate, taker],
    );
    const fresh = await swapTransaction({
      ...plan,
      computeUnitLimit: 123_456,
      computeUnitPrice: 987_654_321n,
      lifetime,
    });
    // Ed25519 signatures are deterministic: the same message signed by the same keys is the same bytes.
    expect(resigned).toEqual({ transaction: fresh.transaction, signature: fresh.signature });
    // And each signature holds for its signer's key over the message, as kit decodes them.
    const sent = getTransactionDecoder().decode(getBase64Encoder().encode(resigned.transaction));
    for (const [signer, signature] of Object.entries(sent.signatures)) {
      const publicKey = createPublicKey({
        key: {
          kty: "OKP",
          crv: "Ed25519",
          x: Buffer.from(getAddressEncoder().encode(signer as Address)).toString("base64url"),
        },
        format: "jwk",
      });
      expect(
        verify(null, sent.messageBytes as unknown as Uint8Array, publicKey, signature as Uint8Array),
      ).toBe(true);
    }
    expect(trial.compiled.message).not.toEqual(fresh.compiled.message);
  });

  it("vets a route: drops idempotent creations and the taker's own close, refuses what names our keys", async () => {
    const keys = {
      executor: address(),
      delegate: address(),
      wallet: address(),
      taker: address(),
      takerInput: address(),
    };
    const allowed = new Set([
      TOKEN_PROGRAM_ADDRESS,
      ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
      "11111111111111111111111111111111",
    ]);
    const token = (data: number[], accounts: [string, boolean, boolean][]): PlainInstruction => ({
      programAddress: TOKEN_PROGRAM_ADDRESS,
      accounts: accounts.map(([a, signer, writable]) => ({ address: a, signer, writable })),
      data: new Uint8Array(data),
    });
    const move = token(
      [12, 1, 0, 0, 0, 0, 0, 0, 0, 6],
      [
        [keys.takerInput, false, true],
        [USDC.mint, false, false],
        [address(), false, true],
        [keys.taker, true, false],
      ],
    );
    const ownClose = token(
      [9],
      [
        [keys.takerInput, false, true],
        [keys.executor, false, true],
        [keys.taker, true, false],
      ],
    );
    const creation = createAta(keys.taker, address(), keys.taker, JUP.mint);
    const kept = vetRoute(
      [
        ["setup instruction 0", creation],
        ["the swap instruction", move],
        ["the cleanup instruction", ownClose],
      ],
      keys,
      allowed,
    );
    expect(kept).toEqual({ ok: true, instructions: [move] });

    const refused = (ix: PlainInstruction) => vetRoute([["other instruction 0", ix]], keys, allowed);
    const system: PlainInstruction = {
      programAddress: "11111111111111111111111111111111",
      accounts: [{ address: keys.taker, signer: true, writable: true }],
      data: new Uint8Array([2, 0, 0, 0]),
    };
    const cases: [PlainInstruction, string, RegExp][] = [
      [system, "system", /System program/],
      [
        token(
          [4, 1, 0, 0, 0, 0, 0, 0, 0],
          [
            [keys.takerInput, false, true],
            [address(), false, false],
            [keys.taker, true, false],
          ],
        ),
        "authority",
        /token Approve/,
      ],
      [
        token(
          [5],
          [
            [keys.takerInput, false, true],
            [keys.taker, true, false],
          ],
        ),
        "authority",
        /token Revoke/,
      ],
      [
        token(
          [6, 2, 0],
          [
            [keys.takerInput, false, true],
            [keys.taker, true, false],
          ],
        ),
        "authority",
        /token SetAuthority/,
      ],
      [
        token([13, 1, 0, 0, 0, 0, 0, 0, 0, 6], [[keys.takerInput, false, true]]),
        "authority",
        /token ApproveChecked/,
      ],
      [
        token(
          [12, 1, 0, 0, 0, 0, 0, 0, 0, 6],
          [
            [address(), false, true],
            [USDC.mint, false, false],
            [address(), false, true],
            [keys.delegate, false, false],
          ],
        ),
        "authority",
        /names the owner's delegate/,
      ],
      [
        token(
          [3, 1, 0, 0, 0, 0, 0, 0, 0],
          [
            [address(), false, true],
            [address(), false, true],
            [keys.executor, false, false],
          ],
        ),
        "authority",
        /names the executor/,
      ],
      [
        token(
          [9],
          [
            [keys.takerInput, false, true],
            [address(), false, true],
            [keys.taker, true, false],
          ],
        ),
        "close",
        /closes/,
      ],
      [
        token(
          [9],
          [
            [address(), false, true],
            [keys.executor, false, true],
            [keys.taker, true, false],
          ],
        ),
        "close",
        /closes/,
      ],
      [
        token(
          [12, 1, 0, 0, 0, 0, 0, 0, 0, 6],
          [
            [address(), false, true],
            [USDC.mint, false, false],
            [address(), false, true],
            [keys.wallet, true, false],
          ],
        ),
        "signer",
        /owner's wallet/,
      ],
      [{ ...creation, data: new Uint8Array([0]) }, "account_op", /other than an idempotent creation/],
      [{ ...creation, data: new Uint8Array([2]) }, "account_op", /other than an idempotent creation/],
      [{ ...move, programAddress: address() }, "program", /not on SWAP_ALLOWED_PROGRAMS/],
    ];
    for (const [ix, reason, text] of cases) {
      const verdict = refused(ix);
      expect(verdict.ok, String(text)).toBe(false);
      if (!verdict.ok) {
        expect(verdict.reason).toBe(reason);
        expect(verdict.text).toMatch(text);
      }
    }
  });

  it("checks the end state of every account our keys or the wallet hold authority over", () => {
    const keys = {
      executor: address(),
      delegate: address(),
      wallet: address(),
      taker: address(),
      takerInput: address(),
    };
    const ownerInput = address();
    const ownerOutput = address();
    const other = address();
    const pool = address();
    /** A token account's 165 bytes, as SPL Token lays them out. */
    const token = (fields: {
      mint: string;
      owner: string;
      amount: bigint;
      delegate?: string;
      delegated?: bigint;
    }) => {
      const data = new Uint8Array(165);
      const view = new DataView(data.buffer);
      data.set(getAddressEncoder().encode(fields.mint as Address), 0);
      data.set(getAddressEncoder().encode(fields.owner as Address), 32);
      view.setBigUint64(64, fields.amount, true);
      if (fields.delegate !== undefined) {
        view.setUint32(72, 1, true);
        data.set(getAddressEncoder().encode(fields.delegate as Address), 76);
      }
      data[108] = 1;
      view.setBigUint64(121, fields.delegated ?? 0n, true);
      return { lamports: 2_039_280n, program: TOKEN_PROGRAM_ADDRESS, data };
    };
    const system = (lamports: bigint) => ({
      lamports,
      program: "11111111111111111111111111111111",
      data: new Uint8Array(),
    });
    const addresses = [keys.executor, ownerInput, ownerOutput, keys.takerInput, other, pool];
    const before = [
      system(10_000_000n),
      token({
        mint: USDC.mint,
        owner: keys.wallet,
        amount: 5_000_000n,
        delegate: keys.delegate,
        delegated: 3_000_000n,
      }),
      token({ mint: JUP.mint, owner: keys.wallet, amount: 0n }),
      undefined,
      token({ mint: JUP.mint, owner: keys.wallet, amount: 7n }),
      token({ mint: JUP.mint, owner: address(), amount: 1_000n }),
    ];
    const swapped = [
      system(10_000_000n - 20_000n),
      token({
        mint: USDC.mint,
        owner: keys.wallet,
        amount: 3_500_000n,
        delegate: keys.delegate,
        delegated: 1_500_000n,
      }),
      token({ mint: JUP.mint, owner: keys.wallet, amount: 900n }),
      undefined,
      before[4],
      // The pool's own vault: the pool's affair.
      token({
        mint: JUP.mint,
        owner: (before[5] && tokenFieldsOf(before[5])?.owner) as string,
        amount: 100n,
      }),
    ];
    const rules = {
      keys,
      ownerInput,
      ownerOutput,
      amount: 1_500_000n,
      minimumOut: 800n,
      outputMint: JUP.mint,
      executorSpendBound: 1_015_000n,
    };
    expect(endStateProblem(addresses, before, swapped, rules)).toBeUndefined();
    const changed = (i: number, to: (typeof swapped)[number]) => swapped.map((a, j) => (j === i ? to : a));
    expect(endStateProblem(addresses, before, changed(0, system(10_000_000n - 2_000_000n)), rules)).toMatch(
      /takes 2000000 lamports from the executor, more than the 1015000/,
    );
    expect(
      endStateProblem(
        addresses,
        before,
        changed(0, { ...system(9_990_000n), program: TOKEN_PROGRAM_ADDRESS }),
        rules,
      ),
    ).toMatch(/changes the owner program or data of the executor's own account/);
    expect(
      endStateProblem(
        addresses,
        before,
        changed(1, token({ mint: USDC.mint, owner: keys.wallet, amount: 0n, delegate: keys.delegate })),
        rules,
      ),
    ).toMatch(/takes 5000000 base units from the owner's input account, not exactly 1500000/);
    expect(
      endStateProblem(
        addresses,
        before,
        changed(2, token({ mint: JUP.mint, owner: keys.wallet, amount: 10n })),
        rules,
      ),
    ).toMatch(/adds 10 base units to the owner's output account, less than the quote's minimum of 800/);
    expect(endStateProblem(addresses, before, changed(3, system(2_039_280n)), rules)).toMatch(
      /taker's input account open/,
    );
    // Another of the wallet's accounts, which the route was never to touch.
    expect(
      endStateProblem(
        addresses,
        before,
        changed(4, token({ mint: JUP.mint, owner: keys.wallet, amount: 0n })),
        rules,
      ),
    ).toMatch(/changes \w+, a token account the service's keys or the owner's wallet hold authority over/);
  });
});
