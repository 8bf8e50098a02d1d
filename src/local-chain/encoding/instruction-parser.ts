import { getBase58Decoder } from "@solana/kit";
import { type ParsedInfo, type ProgramParser, utf8 } from "./instruction-reader.ts";
import { parseAssociatedToken } from "./parse-associated-token.ts";
import { parseSystem } from "./parse-system.ts";
import { parseToken } from "./parse-token.ts";

/**
 * Instructions as JSON-RPC's `jsonParsed` shows them, parsed as Agave's solana-transaction-status
 * parses them (parse_instruction.rs, parse_system.rs, parse_token.rs, parse_associated_token.rs):
 * `{program, programId, parsed: {type, info}, stackHeight}` for the programs wallets show (System,
 * SPL Token and Token-2022's base instructions, Associated Token Account, Memo: its `parsed` is the
 * text itself), and `{programId, accounts, data, stackHeight}` ("partially decoded") for any other
 * program or any instruction those parsers refuse (short data, too few accounts). u64 amounts are
 * integers for System and strings for the token programs, as Agave writes them.
 */

const SYSTEM = "11111111111111111111111111111111";
const TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022 = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
const ASSOCIATED_TOKEN = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
const MEMO_V1 = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
const MEMO_V3 = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";

const PARSERS: Readonly<Record<string, readonly [name: string, parse: ProgramParser]>> = {
  [SYSTEM]: ["system", parseSystem],
  [TOKEN]: ["spl-token", parseToken],
  // Agave names both token programs "spl-token" here (ParsableProgram::SplToken).
  [TOKEN_2022]: ["spl-token", parseToken],
  [ASSOCIATED_TOKEN]: ["spl-associated-token-account", parseAssociatedToken],
};
const MEMO_PROGRAMS = new Set([MEMO_V1, MEMO_V3]);

const base58 = getBase58Decoder();

/** One instruction in jsonParsed form; `accounts` are the addresses it names, in order. */
export function parsedInstruction(
  programId: string,
  accounts: readonly string[],
  data: Uint8Array,
  stackHeight: number | null,
): Record<string, unknown> {
  if (MEMO_PROGRAMS.has(programId)) {
    try {
      return { program: "spl-memo", programId, parsed: utf8.decode(data), stackHeight };
    } catch {
      // Not UTF-8: partially decoded, as Agave falls back.
    }
  }
  const entry = PARSERS[programId];
  if (entry !== undefined) {
    let parsed: ParsedInfo | undefined;
    try {
      parsed = entry[1](data, accounts);
    } catch (error) {
      // A read past the data's end: Agave's deserializer refuses the instruction the same way.
      if (!(error instanceof RangeError)) throw error;
    }
    if (parsed !== undefined) return { program: entry[0], programId, parsed, stackHeight };
  }
  return { programId, accounts: [...accounts], data: base58.decode(data), stackHeight };
}

/**
 * A compiled instruction (indexes into `keys`, base58 data), as the json encoding stores it, in
 * jsonParsed form. An index past the keys leaves it partially decoded with what resolves.
 */
export function parsedCompiledInstruction(
  instruction: {
    programIdIndex: number;
    accounts: readonly number[];
    data: string;
    stackHeight: number | null;
  },
  keys: readonly string[],
  decodeData: (base58Text: string) => Uint8Array,
): Record<string, unknown> {
  const programId = keys[instruction.programIdIndex] ?? "";
  const accounts = instruction.accounts.map((index) => keys[index]);
  if (accounts.some((a) => a === undefined)) {
    return {
      programId,
      accounts: accounts.filter((a) => a !== undefined),
      data: instruction.data,
      stackHeight: instruction.stackHeight,
    };
  }
  return parsedInstruction(
    programId,
    accounts as string[],
    decodeData(instruction.data),
    instruction.stackHeight,
  );
}
