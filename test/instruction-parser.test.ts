/**
 * The jsonParsed instruction parser, called directly on instructions built by the programs' own
 * clients (@solana-program/system and /token), against the shapes Agave's solana-transaction-status
 * tests give (parse_system.rs, parse_token.rs): a wrong layout would not fail loudly, it would fall
 * back to partially decoded, so each type is pinned here. Real transactions: local-chain-parsed.test.ts.
 */

import { type Address, generateKeyPairSigner, getBase58Decoder, type Instruction } from "@solana/kit";
import {
  getAllocateInstruction,
  getAssignInstruction,
  getCreateAccountInstruction,
} from "@solana-program/system";
import {
  AuthorityType,
  getApproveCheckedInstruction,
  getBurnCheckedInstruction,
  getCloseAccountInstruction,
  getInitializeMint2Instruction,
  getMintToInstruction,
  getRevokeInstruction,
  getSetAuthorityInstruction,
  getSyncNativeInstruction,
  getTransferInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { beforeAll, describe, expect, it } from "vitest";
import { parsedInstruction } from "../src/local-chain/index.ts";

const SYSTEM = "11111111111111111111111111111111";
const TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
let a: Address;
let b: Address;
let c: Address;
let d: Address;

beforeAll(async () => {
  [a, b, c, d] = (await Promise.all([1, 2, 3, 4].map(() => generateKeyPairSigner()))).map(
    (s) => s.address,
  ) as [Address, Address, Address, Address];
});

/** An instruction as the chain resolves it: its program, its accounts' addresses, its data. */
const parse = (instruction: Instruction, programId: string = instruction.programAddress) =>
  parsedInstruction(
    programId,
    (instruction.accounts ?? []).map((account) => account.address),
    instruction.data as Uint8Array,
    null,
  );
const noop = (address: Address) => ({ address, signTransactionMessage: undefined }) as never;

describe("System instructions", () => {
  it("createAccount, assign and allocate, lamports and space as integers", () => {
    expect(
      parse(
        getCreateAccountInstruction({
          payer: noop(a),
          newAccount: noop(b),
          lamports: 55n,
          space: 128n,
          programAddress: c,
        }),
      ),
    ).toEqual({
      program: "system",
      programId: SYSTEM,
      parsed: {
        type: "createAccount",
        info: { source: a, newAccount: b, lamports: 55n, space: 128n, owner: c },
      },
      stackHeight: null,
    });
    expect(parse(getAssignInstruction({ account: noop(a), programAddress: c })).parsed).toEqual({
      type: "assign",
      info: { account: a, owner: c },
    });
    expect(parse(getAllocateInstruction({ newAccount: noop(a), space: 42n })).parsed).toEqual({
      type: "allocate",
      info: { account: a, space: 42n },
    });
  });
});

describe("SPL Token and Token-2022 instructions", () => {
  it("transfer with one authority, and with a multisig and its signers", () => {
    const single = parse(
      getTransferInstruction({ source: a, destination: b, authority: noop(c), amount: 42n }),
    );
    expect(single).toEqual({
      program: "spl-token",
      programId: TOKEN_PROGRAM_ADDRESS,
      parsed: { type: "transfer", info: { source: a, destination: b, authority: c, amount: "42" } },
      stackHeight: null,
    });
    const multi = parse(
      getTransferInstruction({
        source: a,
        destination: b,
        authority: c,
        amount: 42n,
        multiSigners: [noop(d)],
      }),
    );
    expect(multi.parsed).toEqual({
      type: "transfer",
      info: { source: a, destination: b, multisigAuthority: c, signers: [d], amount: "42" },
    });
    // Token-2022's base instructions parse alike, under the same program name.
    const token2022 = parse(
      getTransferInstruction({ source: a, destination: b, authority: noop(c), amount: 42n }),
      TOKEN_2022,
    );
    expect(token2022).toMatchObject({ program: "spl-token", programId: TOKEN_2022, parsed: single.parsed });
  });

  it("approveChecked and burnChecked carry a tokenAmount; mintTo an amount string", () => {
    expect(
      parse(
        getApproveCheckedInstruction({
          source: a,
          mint: b,
          delegate: c,
          owner: noop(d),
          amount: 1_500_000n,
          decimals: 6,
        }),
      ).parsed,
    ).toEqual({
      type: "approveChecked",
      info: {
        source: a,
        mint: b,
        delegate: c,
        owner: d,
        tokenAmount: { amount: "1500000", decimals: 6, uiAmount: 1.5, uiAmountString: "1.5" },
      },
    });
    expect(
      parse(getBurnCheckedInstruction({ account: a, mint: b, authority: noop(c), amount: 10n, decimals: 2 }))
        .parsed,
    ).toEqual({
      type: "burnChecked",
      info: {
        account: a,
        mint: b,
        authority: c,
        tokenAmount: { amount: "10", decimals: 2, uiAmount: 0.1, uiAmountString: "0.1" },
      },
    });
    expect(
      parse(getMintToInstruction({ mint: a, token: b, mintAuthority: noop(c), amount: 7n })).parsed,
    ).toEqual({
      type: "mintTo",
      info: { mint: a, account: b, mintAuthority: c, amount: "7" },
    });
  });

  it("setAuthority names what it is an authority of; a cleared authority is null", () => {
    expect(
      parse(
        getSetAuthorityInstruction({
          owned: a,
          owner: noop(b),
          authorityType: AuthorityType.MintTokens,
          newAuthority: c,
        }),
      ).parsed,
    ).toEqual({
      type: "setAuthority",
      info: { mint: a, authorityType: "mintTokens", newAuthority: c, authority: b },
    });
    expect(
      parse(
        getSetAuthorityInstruction({
          owned: a,
          owner: noop(b),
          authorityType: AuthorityType.CloseAccount,
          newAuthority: null,
        }),
      ).parsed,
    ).toEqual({
      type: "setAuthority",
      info: { account: a, authorityType: "closeAccount", newAuthority: null, authority: b },
    });
  });

  it("initializeMint2 leaves out a freeze authority it has not; revoke, closeAccount, syncNative", () => {
    expect(parse(getInitializeMint2Instruction({ mint: a, decimals: 9, mintAuthority: b })).parsed).toEqual({
      type: "initializeMint2",
      info: { mint: a, decimals: 9, mintAuthority: b },
    });
    expect(
      parse(getInitializeMint2Instruction({ mint: a, decimals: 9, mintAuthority: b, freezeAuthority: c }))
        .parsed,
    ).toEqual({
      type: "initializeMint2",
      info: { mint: a, decimals: 9, mintAuthority: b, freezeAuthority: c },
    });
    expect(parse(getRevokeInstruction({ source: a, owner: noop(b) })).parsed).toEqual({
      type: "revoke",
      info: { source: a, owner: b },
    });
    expect(parse(getCloseAccountInstruction({ account: a, destination: b, owner: noop(c) })).parsed).toEqual({
      type: "closeAccount",
      info: { account: a, destination: b, owner: c },
    });
    expect(parse(getSyncNativeInstruction({ account: a })).parsed).toEqual({
      type: "syncNative",
      info: { account: a },
    });
  });
});

describe("what stays partially decoded", () => {
  it("data the parser refuses (a short transfer, too few accounts, a non-UTF-8 memo) and unknown programs", () => {
    const short = parsedInstruction(TOKEN_PROGRAM_ADDRESS, [a, b, c], new Uint8Array([3, 1, 2]), 2);
    expect(short).toEqual({
      programId: TOKEN_PROGRAM_ADDRESS,
      accounts: [a, b, c],
      data: getBase58Decoder().decode(new Uint8Array([3, 1, 2])),
      stackHeight: 2,
    });
    const transfer = getTransferInstruction({ source: a, destination: b, authority: noop(c), amount: 1n });
    expect(
      parsedInstruction(TOKEN_PROGRAM_ADDRESS, [a, b], transfer.data as Uint8Array, null),
    ).not.toHaveProperty("parsed");
    const memo = parsedInstruction(
      "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
      [],
      new Uint8Array([0xff]),
      null,
    );
    expect(memo).toEqual({
      programId: "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr",
      accounts: [],
      data: getBase58Decoder().decode(new Uint8Array([0xff])),
      stackHeight: null,
    });
    expect(parsedInstruction(d, [a], new Uint8Array([1, 2, 3]), null)).not.toHaveProperty("program");
  });
});
