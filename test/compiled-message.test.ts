/**
 * The service's compile of transaction messages (src/chain/compiled-message.ts) against kit's
 * compileTransactionMessage itself: deep equality of the compiled message, or the same error, for
 * random messages built to meet every rule of kit's compile (an address in several roles, the fee
 * payer in instructions and as a program, signers and programs also in lookup tables, an account
 * in several tables, addresses equal but for case or one the beginning of another, legacy and v0,
 * counts past kit's limits, shapes kit's types do not allow). And its order of addresses
 * (src/chain/address-order.ts) against kit's collator.
 */
import {
  AccountRole,
  type Address,
  compileTransactionMessage,
  getAddressComparator,
  isSolanaError,
  type TransactionMessage,
  type TransactionMessageWithFeePayer,
} from "@solana/kit";
import { describe, expect, it, vi } from "vitest";
import { compareAddresses, isAddressText } from "../src/chain/address-order.ts";
import { compiledMessage } from "../src/chain/compiled-message.ts";
import { int, key } from "./support/random-messages.ts";

// Kit's compile, counted: compiledMessage calls it only for what it leaves to kit.
vi.mock("@solana/kit", async (importOriginal) => {
  const kit = await importOriginal<typeof import("@solana/kit")>();
  return { ...kit, compileTransactionMessage: vi.fn(kit.compileTransactionMessage) };
});
const kitCompile = vi.mocked(compileTransactionMessage);

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const chance = (p: number) => Math.random() < p;
const pick = <T>(values: readonly T[]) => values[int(values.length)] as T;

/** `text` with some letters in the other case, where that case is base58 too ("l", "I" and "O" are not). */
function otherCase(text: string): string {
  let out = "";
  for (const c of text) {
    const flipped = c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase();
    out += flipped !== c && ALPHABET.includes(flipped) && chance(0.3) ? flipped : c;
  }
  return out === text ? otherCase(text) : out;
}

/** Keys, and texts kin to some of them: the same but for case, or one the other's beginning. */
function addresses(count: number): Address[] {
  const out: string[] = [];
  while (out.length < count) {
    const base = key(int(5) === 0 ? 1 : 0);
    out.push(base);
    if (chance(0.3)) out.push(otherCase(base));
    if (chance(0.1) && base.length > 33) out.push(base.slice(0, 32 + int(base.length - 32)));
    if (chance(0.1) && base.length < 44) out.push(base + ALPHABET[int(ALPHABET.length)]);
  }
  return [...new Set(out)] as Address[];
}

interface Scenario {
  readonly message: TransactionMessage & TransactionMessageWithFeePayer;
  /**
   * A shape kit's types do not allow (a role past 3, a lookup meta that signs or is in a legacy
   * message, a name that is no key's, version 1): kit's compile is to answer.
   */
  readonly odd: boolean;
}

/**
 * A random message of kit's shape, built without kit's helpers, so that lookup metas can be
 * anything kit's compile reads: an account in several tables, a program or a signer looked up.
 */
function randomScenario(): Scenario {
  const version = chance(0.25) ? "legacy" : 0;
  // Now and then more accounts than kit's 64.
  const big = chance(0.05);
  const pool = addresses(big ? 80 : 3 + int(30));
  const payer = chance(0.2) ? pick(pool) : (key() as Address);
  const programs = Array.from({ length: 1 + int(4) }, () => (chance(0.3) ? pick(pool) : (key() as Address)));
  if (chance(0.03)) programs.push(payer);
  const tables = addresses(1 + int(4));
  // Signers come from a few addresses, so that most messages stay within kit's 12.
  const signers = chance(0.05) ? pool : pool.slice(0, 5);
  let odd = false;
  const meta = (address: Address) => {
    const program = programs.includes(address);
    let role = pick([AccountRole.READONLY, AccountRole.WRITABLE]) as number;
    if (program && chance(0.9)) role = AccountRole.READONLY;
    if (signers.includes(address) && chance(0.4)) role |= 2;
    if (chance(0.0005)) {
      role = pick([4, -1, 1.5]);
      odd = true;
    }
    const lookedUp = (version === 0 || chance(0.005)) && chance(0.4) && (role < 2 || chance(0.01));
    if (!lookedUp) return { address, role };
    if (version === "legacy" || role >= 2) odd = true;
    if (chance(0.01)) {
      // A table that is no key's: kit keys its tables' indexes by the text.
      odd = true;
      return { address, role, lookupTableAddress: pick([undefined, "toString", "1234"]), addressIndex: 1 };
    }
    return { address, role, lookupTableAddress: pick(tables), addressIndex: int(256) };
  };
  const instructions = Array.from({ length: chance(0.01) ? 65 : 1 + int(10) }, () => {
    const program = pick(programs);
    const accounts = Array.from({ length: chance(0.005) ? 256 : big ? 40 : int(14) }, () =>
      meta(chance(0.1) ? payer : chance(0.1) ? pick(programs) : pick(pool)),
    );
    const data = new Uint8Array(int(20));
    return {
      programAddress: program,
      ...(chance(0.8) ? { accounts } : {}),
      ...(chance(0.8) ? { data } : {}),
    };
  });
  if (chance(0.01)) {
    // Names that are no key's, some of them keys every object inherits: kit keys a plain object by them.
    const name = pick(["__proto__", "toString", "constructor", "1234", "not base58!"]);
    instructions.push({ programAddress: pick(programs), accounts: [meta(name as Address)] } as never);
    odd = true;
  }
  const lifetime = pick([
    undefined,
    { blockhash: key(), lastValidBlockHeight: 7n },
    { nonce: key(), nonceAccountAddress: pick(pool), nonceAuthorityAddress: payer },
  ]);
  const v1 = chance(0.01);
  return {
    message: {
      version: v1 ? 1 : version,
      feePayer: { address: payer },
      instructions,
      ...(lifetime === undefined ? {} : { lifetimeConstraint: lifetime }),
    } as never,
    odd: odd || v1,
  };
}

/** Which of the cases kit's compile has rules for a message meets. */
function cases(message: TransactionMessage & TransactionMessageWithFeePayer): Set<string> {
  const out = new Set<string>();
  const metas = message.instructions.flatMap((ix) => ix.accounts ?? []) as {
    address: string;
    role: number;
    lookupTableAddress?: string;
  }[];
  const programs = new Set(message.instructions.map((ix) => ix.programAddress as string));
  const tablesOf = new Map<string, Set<string>>();
  for (const m of metas) {
    if (m.lookupTableAddress === undefined) continue;
    tablesOf.set(m.address, (tablesOf.get(m.address) ?? new Set()).add(m.lookupTableAddress));
    if (programs.has(m.address)) out.add("program looked up");
    if (metas.some((n) => n.address === m.address && n.role >= 2)) out.add("signer looked up");
  }
  if ([...tablesOf.values()].some((t) => t.size > 1)) out.add("in several tables");
  if (metas.some((m) => m.address === message.feePayer.address)) out.add("fee payer in an instruction");
  const roles = new Map<string, Set<number>>();
  for (const m of metas) roles.set(m.address, (roles.get(m.address) ?? new Set()).add(m.role));
  if ([...roles.values()].some((r) => r.size > 2)) out.add("several roles");
  const all = [...new Set([message.feePayer.address, ...programs, ...metas.map((m) => m.address)])];
  const folded = new Set(all.map((a) => a.toLowerCase()));
  if (folded.size < all.length) out.add("same but for case");
  if (all.some((a) => all.some((b) => b !== a && b.startsWith(a)))) out.add("one begins another");
  return out;
}

/** What a compile comes to: its result, or its error as kit's code (or the error's class and text). */
function outcome(compile: () => unknown): { result: unknown } | { error: unknown } {
  try {
    return { result: compile() };
  } catch (error) {
    if (isSolanaError(error)) return { error: error.context.__code };
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

/** A value's keys in order, all the way down: deep equality does not look at their order. */
function keyOrder(value: unknown): unknown {
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return null;
  if (Array.isArray(value)) return value.map(keyOrder);
  return Object.entries(value).map(([k, v]) => [k, keyOrder(v)]);
}

describe("compiledMessage", () => {
  it("compiles 3,000 random messages to kit's compiled message, or to kit's error", () => {
    const seen = { compiled: 0, refused: new Set<unknown>(), odd: 0, ours: 0, legacy: 0, lookups: 0 };
    const met = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const { message, odd } = randomScenario();
      const kits = outcome(() => compileTransactionMessage(message));
      const callsBefore = kitCompile.mock.calls.length;
      const ours = outcome(() => compiledMessage(message));
      const leftToKit = kitCompile.mock.calls.length > callsBefore;
      expect(ours).toStrictEqual(kits);
      if ("result" in ours) {
        expect(keyOrder(ours.result)).toEqual(keyOrder((kits as { result: unknown }).result));
        seen.compiled++;
        // Every message kit compiles of the shape kit's types allow is compiled here, not by kit.
        if (!odd) expect(leftToKit).toBe(false);
        if (!leftToKit) {
          seen.ours++;
          for (const c of cases(message)) met.set(c, (met.get(c) ?? 0) + 1);
        }
        if (message.version === "legacy") seen.legacy++;
        if (((ours.result as { addressTableLookups?: unknown[] }).addressTableLookups?.length ?? 0) > 1) {
          seen.lookups++;
        }
      } else {
        seen.refused.add(ours.error);
      }
      if (odd) seen.odd++;
    }
    // The random messages reach what they are for.
    expect(seen.ours).toBeGreaterThan(1500);
    expect(seen.legacy).toBeGreaterThan(300);
    expect(seen.lookups).toBeGreaterThan(300);
    expect(seen.odd).toBeGreaterThan(20);
    // Kit's six refusals: a program that pays the fee or is written, and each of its limits.
    expect(seen.refused.size).toBeGreaterThanOrEqual(6);
    for (const c of [
      "program looked up",
      "signer looked up",
      "in several tables",
      "fee payer in an instruction",
      "several roles",
      "same but for case",
      "one begins another",
    ]) {
      expect(met.get(c) ?? 0, c).toBeGreaterThan(200);
    }
  });

  it("holds kit's rules where one address has several roles", () => {
    const [payer, program, signer, account, other] = Array.from({ length: 5 }, () => key() as Address) as [
      Address,
      Address,
      Address,
      Address,
      Address,
    ];
    const [t1, t2] = [key(), key()].sort(compareAddresses) as [Address, Address];
    const same = (instructions: unknown[]) => {
      const message = { version: 0, feePayer: { address: payer }, instructions } as never;
      const callsBefore = kitCompile.mock.calls.length;
      expect(outcome(() => compiledMessage(message))).toStrictEqual(
        outcome(() => compileTransactionMessage(message)),
      );
      return kitCompile.mock.calls.length - callsBefore - 1;
    };
    const looked = (address: Address, table: Address, role: AccountRole, addressIndex = 3) => ({
      address,
      role,
      lookupTableAddress: table,
      addressIndex,
    });
    // An account in two tables: the table first in kit's order, whichever comes first.
    expect(
      same([{ programAddress: program, accounts: [looked(account, t2, 0, 1), looked(account, t1, 1, 2)] }]),
    ).toBe(0);
    expect(
      same([{ programAddress: program, accounts: [looked(account, t1, 0, 1), looked(account, t2, 1, 2)] }]),
    ).toBe(0);
    // A signer also looked up stays static, and a looked-up account that signs becomes static.
    expect(
      same([{ programAddress: program, accounts: [{ address: signer, role: 3 }, looked(signer, t1, 0)] }]),
    ).toBe(0);
    expect(
      same([{ programAddress: program, accounts: [looked(signer, t1, 1), { address: signer, role: 2 }] }]),
    ).toBe(0);
    // A program looked up before it is invoked becomes static; after, it stays static.
    expect(
      same([{ programAddress: program, accounts: [looked(other, t1, 0)] }, { programAddress: other }]),
    ).toBe(0);
    expect(
      same([{ programAddress: other }, { programAddress: program, accounts: [looked(other, t1, 0)] }]),
    ).toBe(0);
    // The fee payer in any role of an instruction stays the fee payer.
    expect(
      same([{ programAddress: program, accounts: [looked(payer, t1, 0), { address: payer, role: 0 }] }]),
    ).toBe(0);
    // Kit's refusals: a program that is written, looked up writable, or the fee payer.
    expect(
      same([{ programAddress: program, accounts: [looked(other, t1, 1)] }, { programAddress: other }]),
    ).toBe(1);
    expect(
      same([{ programAddress: other }, { programAddress: program, accounts: [{ address: other, role: 1 }] }]),
    ).toBe(1);
    expect(same([{ programAddress: payer }])).toBe(1);
    // Lookup metas of kit's shape but no table's key: kit's to compile.
    for (const table of [undefined, "toString", "1234", `${t1}!`]) {
      const meta = { address: account, role: 0, lookupTableAddress: table, addressIndex: 0 };
      expect(same([{ programAddress: program, accounts: [meta] }])).toBe(1);
      expect(same([{ programAddress: program, accounts: [looked(account, t1, 0), meta] }])).toBe(1);
    }
  });
});

describe("compareAddresses", () => {
  const collator = getAddressComparator();

  it("sorts every text of up to two base58 characters as kit's collator does", () => {
    const texts = [""];
    for (const a of ALPHABET) texts.push(a);
    for (const a of ALPHABET) for (const b of ALPHABET) texts.push(a + b);
    // Both are total orders, so the same sequence means the same answer for every pair.
    expect([...texts].sort(compareAddresses)).toEqual([...texts].sort(collator));
  });

  it("orders random keys, and the same keys in other cases or shortened, as kit's collator does", () => {
    for (let i = 0; i < 20_000; i++) {
      const a = key(int(3));
      const b = pick([
        () => otherCase(a),
        () => a.slice(0, 32 + int(a.length - 31)),
        () => key(),
        () => otherCase(a.slice(0, 20)) + a.slice(20),
      ])();
      expect(Math.sign(compareAddresses(a, b))).toBe(Math.sign(collator(a, b)));
      expect(Math.sign(compareAddresses(b, a))).toBe(Math.sign(collator(b, a)));
    }
  });

  it("takes as address text 32 to 44 base58 digits only", () => {
    expect(isAddressText(key())).toBe(true);
    expect(isAddressText("1".repeat(32))).toBe(true);
    expect(isAddressText("1".repeat(31))).toBe(false);
    expect(isAddressText("1".repeat(45))).toBe(false);
    expect(isAddressText(`${"1".repeat(31)}l`)).toBe(false);
    expect(isAddressText(`${"1".repeat(31)}é`)).toBe(false);
    expect(isAddressText(undefined)).toBe(false);
  });
});
