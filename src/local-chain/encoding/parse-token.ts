import { uiTokenAmount } from "../runtime/token-accounts.ts";
import { type ParsedInfo, reader, utf8 } from "./instruction-reader.ts";

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
): ParsedInfo["info"] {
  if (a.length > index + 1) {
    info[multi] = a[index];
    info.signers = a.slice(index + 1);
  } else {
    info[single] = a[index];
  }
  return info;
}

/**
 * MintTo and Burn, plain or Checked: Agave parses the plain and the Checked instruction with the
 * same accounts (MintTo: the mint, then the account; Burn: the account, then the mint; then the
 * authority or its multisig), only the amount differs (`amount` as a string, Checked's
 * `tokenAmount`), so one builder serves all four.
 */
function mintToOrBurn(
  type: "mintTo" | "mintToChecked" | "burn" | "burnChecked",
  a: readonly string[],
  amount: { amount: string } | { tokenAmount: unknown },
): ParsedInfo {
  return type === "mintTo" || type === "mintToChecked"
    ? {
        type,
        info: signers(
          { mint: a[0], account: a[1], ...amount },
          a,
          2,
          "mintAuthority",
          "multisigMintAuthority",
        ),
      }
    : {
        type,
        info: signers({ account: a[0], mint: a[1], ...amount }, a, 2, "authority", "multisigAuthority"),
      };
}

/**
 * SPL Token's and Token-2022's base instructions as Agave's parse_token.rs parses them (with
 * Token-2022's unpacking, which both programs share): amounts as strings, `tokenAmount` for the
 * Checked ones.
 */
export function parseToken(data: Uint8Array, a: readonly string[]): ParsedInfo | undefined {
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
      return need(3) ? mintToOrBurn(tag === 7 ? "mintTo" : "burn", a, { amount }) : undefined;
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
      return mintToOrBurn(tag === 14 ? "mintToChecked" : "burnChecked", a, { tokenAmount });
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
