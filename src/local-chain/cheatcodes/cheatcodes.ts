import { type Address, isSome, type Option } from "@solana/kit";
import { AccountState, TOKEN_PROGRAM_ADDRESS } from "@solana-program/token";
import { isBase58Address } from "../../chain/base58-address.ts";
import { associatedTokenAddress } from "../../chain/program-address.ts";
import type { PoolPricing } from "../pools/pool-prices.ts";
import { invalidParams, JsonRpcError, paramError } from "../rpc/json-rpc-error.ts";
import type { RpcMethod } from "../rpc/json-rpc-handler.ts";
import { booleanOf, invalidType, requireParams, u64Param, withContext } from "../rpc/rpc-params.ts";
import { AccountBytesExceededError } from "../runtime/account-bytes.ts";
import { createBoundedMemo } from "../runtime/bounded-memo.ts";
import { AccountRefusedError, type LocalChain } from "../runtime/local-chain.ts";
import { readTokenAccount, tokenAccountBytes } from "../runtime/token-accounts.ts";
import { cheatcodeRefusal } from "./cheatcode-refusal.ts";
import { setTokenPrice } from "./set-token-price.ts";

const SYSTEM_PROGRAM = "11111111111111111111111111111111" as Address;
const NATIVE_MINT = "So11111111111111111111111111111111111111112";
/** A token account's size (the base layout surfpool writes, for either program). */
const ACCOUNT_SIZE = 165;
const ASSOCIATED_CACHED = 10_000;
/** Largest account data a cheatcode writes (Solana's MAX_PERMITTED_DATA_LENGTH, 10 MiB). */
const MAX_DATA_BYTES = 10 * 1024 * 1024;

/**
 * surfpool's cheatcodes, with surfpool's parameters, so that the tools and scripts written for
 * surfpool work here: `surfnet_setAccount` writes an account (lamports, data as hex, owner,
 * rentEpoch), and `surfnet_setTokenAccount` sets a wallet's associated token account for a mint
 * (creating it when missing): its amount, delegate, state, delegated amount and close authority.
 * A developer funds a wallet with any catalog token in one call. Neither writes a program, a
 * sysvar or a program the service depends on, nor makes an account a program
 * (cheatcode-refusal.ts): surfpool would, and one call could break every owner's transactions.
 *
 * And one of our own, in surfpool's namespace: `surfnet_setTokenPrice [mint, usdPrice]` moves a
 * pooled token's price by rebalancing the chain's own pools (set-token-price.ts), which the
 * service on the embedded chain reads its prices from. Without `pricing` (a chain with no pools
 * of its own) it refuses every mint.
 */
export function cheatcodeMethods(chain: LocalChain, pricing?: PoolPricing): Record<string, RpcMethod> {
  /** Associated token accounts by (owner, mint, program): a pure function's answers, bounded. */
  const associated = createBoundedMemo(ASSOCIATED_CACHED, (key) => {
    const [owner, mint, program] = key.split(":") as [string, string, string];
    return associatedTokenAddress(owner, mint, program) as Address;
  });
  return {
    surfnet_setAccount(params) {
      requireParams(params, 2);
      const address = surfpoolPubkey(params[0]);
      const update = objectParam(params[1], "struct AccountUpdate");
      const existing = chain.account(address);
      const lamports = optional(update.lamports, u64Param) ?? existing?.lamports ?? 0n;
      const data =
        optional(update.data, hexParam) ?? (existing?.data as Uint8Array | undefined) ?? new Uint8Array();
      const owner = (optional(update.owner, surfpoolPubkey) ??
        existing?.programAddress ??
        SYSTEM_PROGRAM) as Address;
      const executable = booleanOf(update, "executable", existing?.executable ?? false);
      const rentEpoch = optional(update.rentEpoch, u64Param) ?? existing?.rentEpoch;
      refuseProtected(address, existing, { programAddress: owner, executable });
      try {
        chain.setAccount(address, {
          lamports,
          data,
          programAddress: owner,
          executable,
          ...(rentEpoch === undefined ? {} : { rentEpoch }),
        });
      } catch (error) {
        if (error instanceof AccountBytesExceededError) throw boundError(error);
        if (!(error instanceof AccountRefusedError)) throw error;
        // The caller's account, not the chain, is at fault: their params, not an internal error.
        throw invalidParams(`the account cannot be set (${error.reason})`);
      }
      return withContext(chain.slot("processed"), null);
    },

    async surfnet_setTokenAccount(params) {
      requireParams(params, 3);
      const owner = surfpoolPubkey(params[0]) as Address;
      const mint = surfpoolPubkey(params[1]) as Address;
      const update = objectParam(params[2], "struct TokenAccountUpdate");
      const program = (optional(params[3], surfpoolPubkey) ?? TOKEN_PROGRAM_ADDRESS) as Address;
      // As surfpool: the mint is not checked, amounts are base units, the address written is the
      // associated token account of (owner, mint, program), created when missing.
      // Synchronously (program-address.ts) and kept: the test Swap API server calls this for
      // every route, on the pool it made (the on-curve test is BigInt arithmetic).
      const key = `${owner}:${mint}:${program}`;
      const address = associated.get(key);
      const native = mint === NATIVE_MINT;
      const rent = chain.rentExemption(ACCOUNT_SIZE);
      const current = chain.account(address);
      refuseProtected(address, current, { programAddress: program, executable: false });
      const existing = current === undefined ? undefined : readTokenAccount(current);
      if (current !== undefined && existing === undefined) {
        throw paramError("Failed to unpack token account data: Parse error: Failed to unpack token account");
      }
      const amount = optional(update.amount, u64Param) ?? existing?.amount ?? 0n;
      const data = tokenAccountBytes({
        mint,
        owner,
        amount,
        delegate: someAccount(update.delegate, existing?.delegate),
        state: optional(update.state, stateParam) ?? existing?.state ?? AccountState.Initialized,
        isNative: native ? rent : undefined,
        delegatedAmount: optional(update.delegatedAmount, u64Param) ?? existing?.delegatedAmount ?? 0n,
        closeAuthority: someAccount(update.closeAuthority, existing?.closeAuthority),
      });
      // Lamports are reset to the rent-exempt minimum (plus the amount, for wrapped SOL).
      try {
        chain.setAccount(address, {
          lamports: native ? rent + amount : rent,
          data,
          programAddress: program,
          executable: false,
        });
      } catch (error) {
        throw error instanceof AccountBytesExceededError ? boundError(error) : error;
      }
      return withContext(chain.slot("processed"), null);
    },

    surfnet_setTokenPrice(params) {
      requireParams(params, 2);
      const mint = surfpoolPubkey(params[0]);
      const price = usdParam(params[1]);
      if (pricing === undefined)
        throw paramError(`no local pool holds ${mint}: this chain has no pools of its own`);
      return withContext(chain.slot("processed"), setTokenPrice(chain, pricing, mint, price));
    },
  };
}

/** A price in US dollars: a positive finite number, or a decimal string of one ("0.000021"). */
function usdParam(value: unknown): number {
  if (typeof value !== "number" && typeof value !== "string")
    throw invalidType(value, "a price in US dollars (a number, or a decimal string)");
  const price = typeof value === "string" && /^\d+(\.\d+)?(e-?\d+)?$/i.test(value) ? Number(value) : value;
  if (typeof price !== "number" || !Number.isFinite(price) || !(price > 0))
    throw paramError(`Invalid price ${String(value).slice(0, 64)}: a price in US dollars above 0`);
  return price;
}

/** The chain is full, not the caller's params wrong: -32602 all the same, with the bound and the figures. */
function boundError(error: AccountBytesExceededError): JsonRpcError {
  return paramError(`the account cannot be set: ${error.message}`);
}

/** -32602, naming the account and the rule, when a cheatcode must not write it (cheatcode-refusal.ts). */
function refuseProtected(
  address: string,
  existing: Parameters<typeof cheatcodeRefusal>[1],
  next: Parameters<typeof cheatcodeRefusal>[2],
): void {
  const refusal = cheatcodeRefusal(address, existing, next);
  if (refusal !== undefined) throw invalidParams(refusal);
}

function objectParam(value: unknown, expected: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidType(value, expected);
  return value as Record<string, unknown>;
}

function optional<T>(value: unknown, read: (value: unknown) => T): T | undefined {
  return value === undefined || value === null ? undefined : read(value);
}

/** Hex without 0x, as surfpool reads account data, with its errors' words. */
function hexParam(value: unknown): Uint8Array {
  if (typeof value !== "string") throw invalidType(value, "a hex string");
  // The length first: nothing longer than an account can hold is read at all.
  if (value.length / 2 > MAX_DATA_BYTES)
    throw paramError(`Invalid hex data provided: longer than ${MAX_DATA_BYTES} bytes`);
  const bad = /[^0-9a-fA-F]/.exec(value);
  if (bad !== null)
    throw paramError(`Invalid hex data provided: Invalid character '${bad[0]}' at position ${bad.index}`);
  if (value.length % 2 !== 0) throw paramError("Invalid hex data provided: Odd number of digits");
  return Buffer.from(value, "hex");
}

/** A public key as surfpool's cheatcodes check it: "Invalid pubkey '…'". */
function surfpoolPubkey(value: unknown): string {
  const text = typeof value === "string" ? value : undefined;
  if (text === undefined) throw invalidType(value, "a string");
  if (!isBase58Address(text))
    throw new JsonRpcError(-32602, `Invalid pubkey '${text.slice(0, 64)}'`, "Invalid Base58 string");
  return text;
}

function stateParam(value: unknown): AccountState {
  if (value === "initialized") return AccountState.Initialized;
  if (value === "frozen") return AccountState.Frozen;
  if (value === "uninitialized") return AccountState.Uninitialized;
  throw paramError(`Invalid token account state ${String(value).slice(0, 64)}`);
}

/**
 * surfpool's SetSomeAccount: an address sets it, the string "null" clears it (undefined), null or
 * absent keeps what the account holds.
 */
function someAccount(value: unknown, existing: Option<Address> | undefined): Address | undefined {
  if (value === undefined || value === null)
    return existing !== undefined && isSome(existing) ? existing.value : undefined;
  if (value === "null") return undefined;
  return surfpoolPubkey(value) as Address;
}
