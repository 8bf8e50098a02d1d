import { type Address, none, type Option, some } from "@solana/kit";
import {
  AccountState,
  findAssociatedTokenPda,
  getTokenEncoder,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import { TOKEN_2022_PROGRAM_ADDRESS } from "@solana-program/token-2022";
import { invalidParams, paramError } from "./json-rpc-error.ts";
import type { RpcMethod } from "./json-rpc-handler.ts";
import type { LocalChain } from "./local-chain.ts";
import { booleanOf, invalidType, pubkeyParam, requireParams, u64Param, withContext } from "./rpc-params.ts";
import { readMint, readTokenAccount } from "./token-accounts.ts";

const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;
/** Largest account data a cheatcode writes (Solana's MAX_PERMITTED_DATA_LENGTH, 10 MiB). */
const MAX_DATA_BYTES = 10 * 1024 * 1024;

/**
 * surfpool's cheatcodes, with surfpool's parameters, so that the tools and scripts written for
 * surfpool work here: `surfnet_setAccount` writes any account (lamports, data as hex, owner,
 * executable), and `surfnet_setTokenAccount` sets a wallet's associated token account for a mint
 * (creating it when missing): its amount, delegate, state, delegated amount and close authority.
 * A developer funds a wallet with any catalog token in one call.
 */
export function cheatcodeMethods(chain: LocalChain): Record<string, RpcMethod> {
  return {
    surfnet_setAccount(params) {
      requireParams(params, 2);
      const address = pubkeyParam(params[0]);
      const update = objectParam(params[1], "struct AccountUpdate");
      const existing = chain.account(address);
      const lamports = optional(update.lamports, u64Param) ?? existing?.lamports ?? 0n;
      const data =
        optional(update.data, hexParam) ?? (existing?.data as Uint8Array | undefined) ?? new Uint8Array();
      const owner = (optional(update.owner, pubkeyParam) ??
        existing?.programAddress ??
        SYSTEM_PROGRAM) as Address;
      const executable = booleanOf(update, "executable", existing?.executable ?? false);
      chain.setAccount(address, { lamports, data, programAddress: owner, executable });
      return withContext(chain.slot("processed"), null);
    },

    async surfnet_setTokenAccount(params) {
      requireParams(params, 3);
      const owner = pubkeyParam(params[0]) as Address;
      const mint = pubkeyParam(params[1]) as Address;
      const update = objectParam(params[2], "struct TokenAccountUpdate");
      const program = (optional(params[3], pubkeyParam) ?? TOKEN_PROGRAM_ADDRESS) as Address;
      if (program !== TOKEN_PROGRAM_ADDRESS && program !== TOKEN_2022_PROGRAM_ADDRESS) {
        throw paramError(`unrecognized token program ${program}`);
      }
      if (readMint(chain.account(mint)) === undefined) throw paramError(`mint ${mint} does not exist`);
      const [address] = await findAssociatedTokenPda({ owner, mint, tokenProgram: program });
      {
        const existing = readTokenAccount(chain.account(address));
        const state =
          optional(update.state, stateParam) ??
          (existing?.state === 2 ? AccountState.Frozen : AccountState.Initialized);
        const data = getTokenEncoder().encode({
          mint,
          owner,
          amount: optional(update.amount, u64Param) ?? existing?.amount ?? 0n,
          delegate: someAccount(update.delegate, existing?.delegate),
          state,
          isNative: existing?.isNative ?? none(),
          delegatedAmount: optional(update.delegatedAmount, u64Param) ?? existing?.delegatedAmount ?? 0n,
          closeAuthority: someAccount(update.closeAuthority, existing?.closeAuthority),
        }) as Uint8Array;
        chain.setAccount(address, {
          lamports: chain.account(address)?.lamports ?? chain.rentExemption(data.length),
          data,
          programAddress: program,
          executable: false,
        });
        return withContext(chain.slot("processed"), null);
      }
    },
  };
}

function objectParam(value: unknown, expected: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidType(value, expected);
  return value as Record<string, unknown>;
}

function optional<T>(value: unknown, read: (value: unknown) => T): T | undefined {
  return value === undefined || value === null ? undefined : read(value);
}

function hexParam(value: unknown): Uint8Array {
  if (typeof value !== "string") throw invalidType(value, "a hex string");
  if (value.length % 2 !== 0 || !/^(0x)?[0-9a-fA-F]*$/.test(value)) throw paramError("invalid hex data");
  const bytes = Buffer.from(value.replace(/^0x/, ""), "hex");
  if (bytes.length > MAX_DATA_BYTES) throw paramError(`data longer than ${MAX_DATA_BYTES} bytes`);
  return bytes;
}

function stateParam(value: unknown): AccountState {
  if (value === "initialized") return AccountState.Initialized;
  if (value === "frozen") return AccountState.Frozen;
  if (value === "uninitialized") return AccountState.Uninitialized;
  throw invalidParams(
    `unknown variant \`${String(value)}\`, expected one of \`uninitialized\`, \`initialized\`, \`frozen\``,
  );
}

/** surfpool's SetSomeAccount: an address sets it, null clears it, absent keeps it. */
function someAccount(value: unknown, existing: Option<Address> | undefined): Option<Address> {
  if (value === undefined) return existing ?? none();
  if (value === null) return none();
  return some(pubkeyParam(value) as Address);
}
