/**
 * The embedded chain's hand-written decoders (src/local-chain/runtime/transaction-bytes.ts, the base
 * layout in token-accounts.ts, base58Text) against kit's codecs they stand in for, over random and
 * real transactions and accounts, malformed bytes included: where the hand-written decoder answers,
 * it must answer exactly as kit does, and it must answer for every plain transaction (else the
 * chain would silently be back on kit's codecs).
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  getBase58Decoder,
  getBase58Encoder,
  getCompiledTransactionMessageDecoder,
  getCompiledTransactionMessageEncoder,
  getShortU16Encoder,
  getTransactionDecoder,
  getTransactionEncoder,
  none,
  type Option,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  some,
} from "@solana/kit";
import {
  getTokenDecoder as getClassicTokenDecoder,
  getTokenEncoder,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import {
  getTokenDecoder as getToken2022TokenDecoder,
  TOKEN_2022_PROGRAM_ADDRESS,
} from "@solana-program/token-2022";
import { describe, expect, it } from "vitest";
import { base58Bytes, base58Text } from "../src/chain/base58-address.ts";
import {
  decodeTransactionBytes,
  decodeWireTransaction,
  MAX_TRANSACTION_BYTES,
  readTokenAccount,
  tokenAccountBytes,
  WireTransactionError,
} from "../src/local-chain/index.ts";
import { int, key, randomMessage } from "./support/random-messages.ts";

const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111" as Address;
const shortU16 = getShortU16Encoder();

/** Kit's answer for bytes: the decoded transaction and message, or that it refused. */
function kitDecode(bytes: Uint8Array) {
  try {
    const transaction = getTransactionDecoder().decode(bytes);
    const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
    return { transaction, message };
  } catch {
    return undefined;
  }
}

/** The wire form: a compact-u16 count, the signatures (some missing: zeros), the message. */
function wireOf(messageBytes: Uint8Array, signatures: number): Uint8Array {
  const parts = [shortU16.encode(signatures) as Uint8Array];
  for (let i = 0; i < signatures; i++)
    parts.push(int(3) === 0 ? new Uint8Array(64) : new Uint8Array(randomBytes(64)));
  parts.push(messageBytes);
  return new Uint8Array(Buffer.concat(parts));
}

function randomTransaction(): Uint8Array {
  const version = int(2) === 0 ? "legacy" : 0;
  const signers = 1 + int(3);
  const message = getCompiledTransactionMessageEncoder().encode(randomMessage(version, signers) as never);
  return wireOf(message as Uint8Array, signers);
}

/** Transactions as the service builds them: compute budget, a token transfer, a fee payer. */
function realTransaction(version: "legacy" | 0): Uint8Array {
  const message = pipe(
    createTransactionMessage({ version }),
    (m) => setTransactionMessageFeePayer(key() as Address, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: key() as string as Blockhash, lastValidBlockHeight: 1n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstructions(
        [
          // The compute budget's unit limit and price, as the service lays them out.
          { programAddress: COMPUTE_BUDGET, data: new Uint8Array([2, 0x40, 0x0d, 0x03, 0]) },
          { programAddress: COMPUTE_BUDGET, data: new Uint8Array([3, 0xe8, 3, 0, 0, 0, 0, 0, 0]) },
          getTransferCheckedInstruction({
            source: key() as Address,
            mint: key() as Address,
            destination: key() as Address,
            authority: key() as Address,
            amount: BigInt(int(1e9)),
            decimals: 6,
          }),
        ],
        m,
      ),
  );
  return new Uint8Array(getTransactionEncoder().encode(compileTransaction(message)));
}

/** Damaged forms of valid bytes: cut short, a byte changed, bytes added, a count changed. */
function damaged(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < 6; i++) out.push(bytes.subarray(0, int(bytes.length)));
  for (let i = 0; i < 6; i++) {
    const copy = new Uint8Array(bytes);
    copy[int(copy.length)] = int(256);
    out.push(copy);
  }
  const copy = new Uint8Array(bytes);
  const at = 1 + 64 * (bytes[0] as number) + int(4);
  copy[at] = (copy[at] as number) ^ 0x80;
  out.push(copy);
  out.push(new Uint8Array([...bytes, int(256)]));
  out.push(new Uint8Array([(bytes[0] as number) + 1, ...bytes.subarray(1)]));
  out.push(new Uint8Array(randomBytes(int(400))));
  return out;
}

describe("the local chain's transaction decoder", () => {
  it("decodes every plain transaction exactly as kit's codecs do", () => {
    const samples = [
      ...Array.from({ length: 1_500 }, randomTransaction),
      ...Array.from({ length: 100 }, (_, i) => realTransaction(i % 2 === 0 ? "legacy" : 0)),
    ];
    for (const bytes of samples) {
      const kit = kitDecode(bytes);
      expect(kit).toBeDefined();
      expect(decodeTransactionBytes(bytes)).toStrictEqual(kit);
      // The chain hands LiteSVM the bytes as sent, for what its wrapper would encode again.
      expect(new Uint8Array(getTransactionEncoder().encode(kit?.transaction as never))).toEqual(bytes);
    }
  });

  it("answers malformed bytes only where kit does, and then as kit does; the chain refuses them as before", () => {
    let answered = 0;
    let refused = 0;
    for (let i = 0; i < 600; i++) {
      const valid = i % 10 === 0 ? realTransaction(i % 20 === 0 ? "legacy" : 0) : randomTransaction();
      for (const bytes of damaged(valid)) {
        const kit = kitDecode(bytes);
        const mine = decodeTransactionBytes(bytes);
        if (mine !== undefined) {
          answered++;
          expect(kit).toStrictEqual(mine);
        }
        if (kit !== undefined && bytes.length <= MAX_TRANSACTION_BYTES) {
          if (Object.keys(kit.transaction.signatures).length === 0) {
            // Damage that leaves no signer at all (a first byte of 0): kit decodes it, but will not
            // encode it again, so there is no wrapper's encoding to agree with.
            expect(() => getTransactionEncoder().encode(kit.transaction)).toThrow(/no expected signers/);
          } else {
            expect(new Uint8Array(getTransactionEncoder().encode(kit.transaction))).toEqual(bytes);
          }
        }
        if (kit === undefined) {
          refused++;
          // Never a crash: the chain's own refusal, whatever the bytes.
          expect(() => decodeWireTransaction(bytes, () => undefined)).toThrow(WireTransactionError);
          if (bytes.length <= MAX_TRANSACTION_BYTES) {
            expect(() => decodeWireTransaction(bytes, () => undefined)).toThrow(
              "failed to deserialize the transaction",
            );
          }
        }
      }
    }
    // Both kinds occurred: damaged bytes that still decode (a changed key, say) and refused ones.
    expect(answered).toBeGreaterThan(500);
    expect(refused).toBeGreaterThan(500);
  });

  it("leaves version 1, the message-first form, to kit", () => {
    const bytes = randomTransaction();
    const v1 = new Uint8Array(bytes);
    v1[1 + 64 * (bytes[0] as number)] = 0x81;
    expect(decodeTransactionBytes(v1)).toBeUndefined();
    expect(decodeTransactionBytes(new Uint8Array([0x81, 1, 0, 0]))).toBeUndefined();
    expect(decodeTransactionBytes(new Uint8Array())).toBeUndefined();
  });
});

describe("the local chain's token account decoder", () => {
  /** Decoded as the chain did with kit's codecs. */
  const kitToken = (program: Address, data: Uint8Array) => {
    try {
      const token =
        program === TOKEN_PROGRAM_ADDRESS
          ? { ...getClassicTokenDecoder().decode(data), extensions: { __option: "None" as const } }
          : getToken2022TokenDecoder().decode(data);
      return token.state === 0 ? undefined : { ...token, program };
    } catch {
      return undefined;
    }
  };
  const tag = () => [0, 1, 1, 2, 0x01000001, 0xffffffff][int(6)] as number;

  it("reads base-layout accounts of both programs as kit's codecs do, odd tags and states included", () => {
    let accounts = 0;
    for (let i = 0; i < 3_000; i++) {
      const program = i % 2 === 0 ? TOKEN_PROGRAM_ADDRESS : TOKEN_2022_PROGRAM_ADDRESS;
      let data: Uint8Array;
      if (i % 3 === 0) {
        data = new Uint8Array(
          getTokenEncoder().encode({
            mint: key(int(3)) as Address,
            owner: key() as Address,
            amount: BigInt(`0x${randomBytes(8).toString("hex")}`),
            delegate: int(2) === 0 ? null : (key() as Address),
            state: int(3),
            isNative: int(2) === 0 ? null : BigInt(int(1e9)),
            delegatedAmount: BigInt(int(1e12)),
            closeAuthority: int(2) === 0 ? null : (key() as Address),
          }),
        );
      } else {
        data = new Uint8Array(randomBytes(165));
        data[108] = [0, 1, 1, 2, 3, 200][int(6)] as number;
        const view = new DataView(data.buffer);
        for (const at of [72, 109, 129]) view.setUint32(at, tag(), true);
      }
      const expected = kitToken(program, data);
      if (expected !== undefined) accounts++;
      const raw = { lamports: 2_039_280n, programAddress: program, data, executable: false };
      expect(readTokenAccount(raw)).toStrictEqual(expected);
    }
    expect(accounts).toBeGreaterThan(1_000);
  });
});

describe("the local chain's token account writer", () => {
  it("writes what kit's token encoder writes, options and native amounts included", () => {
    const encoder = getTokenEncoder();
    const u64 = () => BigInt.asUintN(64, BigInt(`0x${randomBytes(8).toString("hex")}`) >> BigInt(int(64)));
    for (let i = 0; i < 1_000; i++) {
      const fields = {
        mint: key(),
        owner: key(),
        amount: u64(),
        delegate: int(2) === 0 ? undefined : key(),
        state: int(3),
        isNative: int(2) === 0 ? undefined : u64(),
        delegatedAmount: u64(),
        closeAuthority: int(2) === 0 ? undefined : key(),
      };
      const option = <T>(value: T | undefined): Option<T> => (value === undefined ? none() : some(value));
      const expected = encoder.encode({
        ...fields,
        delegate: option(fields.delegate),
        isNative: option(fields.isNative),
        closeAuthority: option(fields.closeAuthority),
      });
      expect(tokenAccountBytes(fields)).toStrictEqual(new Uint8Array(expected));
    }
    const fields = { mint: key(), owner: "not a key", amount: 0n, state: 1, delegatedAmount: 0n };
    expect(() =>
      tokenAccountBytes({ ...fields, delegate: undefined, isNative: undefined, closeAuthority: undefined }),
    ).toThrow(TypeError);
  });
});

describe("base58 of any bytes without BigInt", () => {
  it("writes what kit's base58 decoder writes", () => {
    const kit = getBase58Decoder();
    for (let i = 0; i < 2_000; i++) {
      const bytes = new Uint8Array(randomBytes(int(120)));
      bytes.fill(0, 0, int(5) === 0 ? int(4) : 0);
      expect(base58Text(bytes)).toBe(kit.decode(bytes));
    }
    expect(base58Text(new Uint8Array())).toBe("");
    expect(base58Text(new Uint8Array(64))).toBe("1".repeat(64));
    expect(base58Text(new Uint8Array(64).fill(255))).toBe(kit.decode(new Uint8Array(64).fill(255)));
    // Past 4,096 digits the text is made in pieces.
    const long = new Uint8Array(randomBytes(3_100));
    long.fill(0, 0, 3);
    expect(base58Text(long)).toBe(kit.decode(long));
  });

  it("reads what kit's base58 encoder reads, and refuses what it refuses", () => {
    const kit = getBase58Encoder();
    const kitBytes = (text: string) => {
      try {
        return new Uint8Array(kit.encode(text));
      } catch {
        return undefined;
      }
    };
    const texts = ["", "1", "111", "z", "0", "O", "I", "l", "1+", "é", "2".repeat(90)];
    for (let i = 0; i < 2_000; i++) {
      const bytes = new Uint8Array(randomBytes(int(100)));
      bytes.fill(0, 0, int(5) === 0 ? int(4) : 0);
      const text = base58Text(bytes);
      texts.push(text);
      // One character changed, perhaps into one that is not base58.
      const at = int(text.length + 1);
      texts.push(text.slice(0, at) + "1239AZaz0OIl_ "[int(14)] + text.slice(at + 1));
    }
    for (const text of texts) expect(base58Bytes(text), text).toStrictEqual(kitBytes(text));
  });
});
