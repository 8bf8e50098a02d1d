import { getBase58Decoder } from "@solana/kit";
import { uiTokenAmount } from "./token-accounts.ts";

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

type Parsed = { type: string; info: Record<string, unknown> };
/** A program's parser: the parsed instruction, or undefined when Agave's would refuse it. */
type ProgramParser = (data: Uint8Array, accounts: readonly string[]) => Parsed | undefined;

const PARSERS: Readonly<Record<string, readonly [name: string, parse: ProgramParser]>> = {
  [SYSTEM]: ["system", parseSystem],
  [TOKEN]: ["spl-token", parseToken],
  // Agave names both token programs "spl-token" here (ParsableProgram::SplToken).
  [TOKEN_2022]: ["spl-token", parseToken],
  [ASSOCIATED_TOKEN]: ["spl-associated-token-account", parseAssociatedToken],
};
const MEMO_PROGRAMS = new Set([MEMO_V1, MEMO_V3]);

const base58 = getBase58Decoder();
const utf8 = new TextDecoder("utf-8", { fatal: true });

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
    let parsed: Parsed | undefined;
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

/** Little-endian reads that throw RangeError past the end, as a deserializer fails. */
function reader(data: Uint8Array) {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let at = 0;
  return {
    get left() {
      return data.length - at;
    },
    u8: () => view.getUint8(at++),
    u16() {
      const v = view.getUint16(at, true);
      at += 2;
      return v;
    },
    u32() {
      const v = view.getUint32(at, true);
      at += 4;
      return v;
    },
    u64() {
      const v = view.getBigUint64(at, true);
      at += 8;
      return v;
    },
    pubkey() {
      if (at + 32 > data.length) throw new RangeError("short pubkey");
      const v = base58.decode(data.subarray(at, at + 32));
      at += 32;
      return v;
    },
    /** bincode's String: a u64 length, then UTF-8. */
    string() {
      const length = Number(this.u64());
      if (at + length > data.length) throw new RangeError("short string");
      const v = utf8.decode(data.subarray(at, at + length));
      at += length;
      return v;
    },
    rest() {
      const v = data.subarray(at);
      at = data.length;
      return v;
    },
  };
}

function parseSystem(data: Uint8Array, a: readonly string[]): Parsed | undefined {
  const r = reader(data);
  const need = (n: number) => a.length >= n;
  switch (r.u32()) {
    case 0: {
      const lamports = r.u64();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? { type: "createAccount", info: { source: a[0], newAccount: a[1], lamports, space, owner } }
        : undefined;
    }
    case 1: {
      const owner = r.pubkey();
      return need(1) ? { type: "assign", info: { account: a[0], owner } } : undefined;
    }
    case 2: {
      const lamports = r.u64();
      return need(2) ? { type: "transfer", info: { source: a[0], destination: a[1], lamports } } : undefined;
    }
    case 3: {
      const base = r.pubkey();
      const seed = r.string();
      const lamports = r.u64();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? {
            type: "createAccountWithSeed",
            info: { source: a[0], newAccount: a[1], base, seed, lamports, space, owner },
          }
        : undefined;
    }
    case 4:
      return need(3)
        ? {
            type: "advanceNonce",
            info: { nonceAccount: a[0], recentBlockhashesSysvar: a[1], nonceAuthority: a[2] },
          }
        : undefined;
    case 5: {
      const lamports = r.u64();
      return need(5)
        ? {
            type: "withdrawFromNonce",
            info: {
              nonceAccount: a[0],
              destination: a[1],
              recentBlockhashesSysvar: a[2],
              rentSysvar: a[3],
              nonceAuthority: a[4],
              lamports,
            },
          }
        : undefined;
    }
    case 6: {
      const authority = r.pubkey();
      return need(3)
        ? {
            type: "initializeNonce",
            info: {
              nonceAccount: a[0],
              recentBlockhashesSysvar: a[1],
              rentSysvar: a[2],
              nonceAuthority: authority,
            },
          }
        : undefined;
    }
    case 7: {
      const authority = r.pubkey();
      return need(2)
        ? {
            type: "authorizeNonce",
            info: { nonceAccount: a[0], nonceAuthority: a[1], newAuthorized: authority },
          }
        : undefined;
    }
    case 8: {
      const space = r.u64();
      return need(1) ? { type: "allocate", info: { account: a[0], space } } : undefined;
    }
    case 9: {
      const base = r.pubkey();
      const seed = r.string();
      const space = r.u64();
      const owner = r.pubkey();
      return need(2)
        ? { type: "allocateWithSeed", info: { account: a[0], base, seed, space, owner } }
        : undefined;
    }
    case 10: {
      const base = r.pubkey();
      const seed = r.string();
      const owner = r.pubkey();
      return need(2) ? { type: "assignWithSeed", info: { account: a[0], base, seed, owner } } : undefined;
    }
    case 11: {
      const lamports = r.u64();
      const sourceSeed = r.string();
      const sourceOwner = r.pubkey();
      return need(3)
        ? {
            type: "transferWithSeed",
            info: { source: a[0], sourceBase: a[1], destination: a[2], lamports, sourceSeed, sourceOwner },
          }
        : undefined;
    }
    case 12:
      return need(1) ? { type: "upgradeNonce", info: { nonceAccount: a[0] } } : undefined;
    default:
      return undefined;
  }
}

/** Token-2022's AuthorityType, as Agave's UiAuthorityType names it, and what it is an authority of. */
const AUTHORITY_TYPES: readonly (readonly [name: string, of: "mint" | "account"])[] = [
  ["mintTokens", "mint"],
  ["freezeAccount", "mint"],
  ["accountOwner", "account"],
  ["closeAccount", "account"],
  ["transferFeeConfig", "mint"],
  ["withheldWithdraw", "mint"],
  ["closeMint", "mint"],
  ["interestRate", "mint"],
  ["permanentDelegate", "mint"],
  ["confidentialTransferMint", "mint"],
  ["transferHookProgramId", "mint"],
  ["confidentialTransferFeeConfig", "mint"],
  ["metadataPointer", "mint"],
  ["groupPointer", "mint"],
  ["groupMemberPointer", "mint"],
  ["scaledUiAmount", "mint"],
  ["pause", "mint"],
  ["permissionedBurn", "mint"],
];

/** Token-2022's ExtensionType by number, as Agave's UiExtensionType names it. */
const EXTENSION_TYPES = [
  "uninitialized",
  "transferFeeConfig",
  "transferFeeAmount",
  "mintCloseAuthority",
  "confidentialTransferMint",
  "confidentialTransferAccount",
  "defaultAccountState",
  "immutableOwner",
  "memoTransfer",
  "nonTransferable",
  "interestBearingConfig",
  "cpiGuard",
  "permanentDelegate",
  "nonTransferableAccount",
  "transferHook",
  "transferHookAccount",
  "confidentialTransferFeeConfig",
  "confidentialTransferFeeAmount",
  "metadataPointer",
  "tokenMetadata",
  "groupPointer",
  "tokenGroup",
  "groupMemberPointer",
  "tokenGroupMember",
  "confidentialMintBurn",
  "scaledUiAmountConfig",
  "pausableConfig",
  "pausableAccount",
  "permissionedBurn",
];

/**
 * The signing authority of a token instruction, as Agave's parse_signers names it: one account
 * at `index` is `single`; more after it make that one a multisig (`multi`) and the rest its `signers`.
 */
function signers(
  info: Record<string, unknown>,
  a: readonly string[],
  index: number,
  single: string,
  multi: string,
): Parsed["info"] {
  if (a.length > index + 1) {
    info[multi] = a[index];
    info.signers = a.slice(index + 1);
  } else {
    info[single] = a[index];
  }
  return info;
}

function parseToken(data: Uint8Array, a: readonly string[]): Parsed | undefined {
  const r = reader(data);
  const need = (n: number) => a.length >= n;
  /** COption<Pubkey> as Token-2022 packs it: a tag byte, then the key when it is 1. */
  const optionalPubkey = (): string | null | undefined => {
    const tag = r.u8();
    return tag === 0 ? null : tag === 1 ? r.pubkey() : undefined;
  };
  const tag = r.u8();
  switch (tag) {
    case 0:
    case 20: {
      const decimals = r.u8();
      const mintAuthority = r.pubkey();
      const freeze = optionalPubkey();
      if (freeze === undefined || !need(tag === 0 ? 2 : 1)) return undefined;
      const info: Record<string, unknown> = { mint: a[0], decimals, mintAuthority };
      if (tag === 0) info.rentSysvar = a[1];
      if (freeze !== null) info.freezeAuthority = freeze;
      return { type: tag === 0 ? "initializeMint" : "initializeMint2", info };
    }
    case 1:
      return need(4)
        ? { type: "initializeAccount", info: { account: a[0], mint: a[1], owner: a[2], rentSysvar: a[3] } }
        : undefined;
    case 2:
    case 19: {
      const m = r.u8();
      const first = tag === 2 ? 2 : 1;
      if (!need(first + 1)) return undefined;
      const info: Record<string, unknown> = { multisig: a[0] };
      if (tag === 2) info.rentSysvar = a[1];
      info.signers = a.slice(first);
      info.m = m;
      return { type: tag === 2 ? "initializeMultisig" : "initializeMultisig2", info };
    }
    case 3: {
      const amount = r.u64().toString();
      return need(3)
        ? {
            type: "transfer",
            info: signers(
              { source: a[0], destination: a[1], amount },
              a,
              2,
              "authority",
              "multisigAuthority",
            ),
          }
        : undefined;
    }
    case 4: {
      const amount = r.u64().toString();
      return need(3)
        ? {
            type: "approve",
            info: signers({ source: a[0], delegate: a[1], amount }, a, 2, "owner", "multisigOwner"),
          }
        : undefined;
    }
    case 5:
      return need(2)
        ? { type: "revoke", info: signers({ source: a[0] }, a, 1, "owner", "multisigOwner") }
        : undefined;
    case 6: {
      const kind = AUTHORITY_TYPES[r.u8()];
      const newAuthority = optionalPubkey();
      if (kind === undefined || newAuthority === undefined || !need(2)) return undefined;
      return {
        type: "setAuthority",
        info: signers(
          { [kind[1]]: a[0], authorityType: kind[0], newAuthority },
          a,
          1,
          "authority",
          "multisigAuthority",
        ),
      };
    }
    case 7:
    case 8: {
      const amount = r.u64().toString();
      if (!need(3)) return undefined;
      return tag === 7
        ? {
            type: "mintTo",
            info: signers(
              { mint: a[0], account: a[1], amount },
              a,
              2,
              "mintAuthority",
              "multisigMintAuthority",
            ),
          }
        : {
            type: "burn",
            info: signers({ account: a[0], mint: a[1], amount }, a, 2, "authority", "multisigAuthority"),
          };
    }
    case 9:
      return need(3)
        ? {
            type: "closeAccount",
            info: signers({ account: a[0], destination: a[1] }, a, 2, "owner", "multisigOwner"),
          }
        : undefined;
    case 10:
    case 11:
      return need(3)
        ? {
            type: tag === 10 ? "freezeAccount" : "thawAccount",
            info: signers({ account: a[0], mint: a[1] }, a, 2, "freezeAuthority", "multisigFreezeAuthority"),
          }
        : undefined;
    case 12:
    case 13:
    case 14:
    case 15: {
      const amount = r.u64();
      const tokenAmount = uiTokenAmount(amount, r.u8());
      if (!need(tag <= 13 ? 4 : 3)) return undefined;
      if (tag === 12) {
        return {
          type: "transferChecked",
          info: signers(
            { source: a[0], mint: a[1], destination: a[2], tokenAmount },
            a,
            3,
            "authority",
            "multisigAuthority",
          ),
        };
      }
      if (tag === 13) {
        return {
          type: "approveChecked",
          info: signers(
            { source: a[0], mint: a[1], delegate: a[2], tokenAmount },
            a,
            3,
            "owner",
            "multisigOwner",
          ),
        };
      }
      return tag === 14
        ? {
            type: "mintToChecked",
            info: signers(
              { mint: a[0], account: a[1], tokenAmount },
              a,
              2,
              "mintAuthority",
              "multisigMintAuthority",
            ),
          }
        : {
            type: "burnChecked",
            info: signers({ account: a[0], mint: a[1], tokenAmount }, a, 2, "authority", "multisigAuthority"),
          };
    }
    case 16:
    case 18: {
      const owner = r.pubkey();
      if (tag === 16) {
        return need(3)
          ? { type: "initializeAccount2", info: { account: a[0], mint: a[1], owner, rentSysvar: a[2] } }
          : undefined;
      }
      return need(2) ? { type: "initializeAccount3", info: { account: a[0], mint: a[1], owner } } : undefined;
    }
    case 17:
      return need(1) ? { type: "syncNative", info: { account: a[0] } } : undefined;
    case 21: {
      const rest = r.rest();
      if (rest.length % 2 !== 0 || !need(1)) return undefined;
      const types: string[] = [];
      const view = new DataView(rest.buffer, rest.byteOffset, rest.byteLength);
      for (let at = 0; at < rest.length; at += 2) {
        const name = EXTENSION_TYPES[view.getUint16(at, true)];
        if (name === undefined) return undefined;
        types.push(name);
      }
      const info: Record<string, unknown> = { mint: a[0] };
      if (types.length > 0) info.extensionTypes = types;
      return { type: "getAccountDataSize", info };
    }
    case 22:
      return need(1) ? { type: "initializeImmutableOwner", info: { account: a[0] } } : undefined;
    case 23: {
      const amount = r.u64().toString();
      return need(1) ? { type: "amountToUiAmount", info: { mint: a[0], amount } } : undefined;
    }
    case 24: {
      let uiAmount: string;
      try {
        uiAmount = utf8.decode(r.rest());
      } catch {
        return undefined;
      }
      return need(1) ? { type: "uiAmountToAmount", info: { mint: a[0], uiAmount } } : undefined;
    }
    case 38:
      return need(3)
        ? {
            type: "withdrawExcessLamports",
            info: signers({ source: a[0], destination: a[1] }, a, 2, "authority", "multisigAuthority"),
          }
        : undefined;
    default:
      // Token-2022's extension instructions stay partially decoded here (see docs/local-chain.md).
      return undefined;
  }
}

function parseAssociatedToken(data: Uint8Array, a: readonly string[]): Parsed | undefined {
  // No data is the original Create; otherwise a one-byte borsh enum and nothing after it.
  const kind = data.length === 0 ? 0 : data.length === 1 ? data[0] : undefined;
  if (kind === 0 || kind === 1) {
    if (a.length < 6) return undefined;
    return {
      type: kind === 0 ? "create" : "createIdempotent",
      info: {
        source: a[0],
        account: a[1],
        wallet: a[2],
        mint: a[3],
        systemProgram: a[4],
        tokenProgram: a[5],
      },
    };
  }
  if (kind === 2) {
    if (a.length < 7) return undefined;
    return {
      type: "recoverNested",
      info: {
        nestedSource: a[0],
        nestedMint: a[1],
        destination: a[2],
        nestedOwner: a[3],
        ownerMint: a[4],
        wallet: a[5],
        tokenProgram: a[6],
      },
    };
  }
  return undefined;
}
