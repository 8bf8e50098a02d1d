/**
 * A swap agent's tokens as CreateAgent checks them against their mints on the chain: a Token-2022
 * mint with a transfer fee or a transfer hook is refused, naming the field, as Jupiter's own DCA
 * refuses them (the amount in would not arrive whole, and a hook runs anything on each transfer).
 * The rule is called directly, with the facts the chain adapter reads (see kit-chain's getMint).
 */
import { describe, expect, it } from "vitest";
import type { MintFacts } from "../src/agent/agent-config.ts";
import { validateAgentConfig } from "../src/agent/agent-config.ts";
import type { FieldViolation } from "../src/domain/errors.ts";
import { swapKind } from "../src/kinds/swap/swap-kind.ts";
import { transferKind } from "../src/kinds/transfer/transfer-kind.ts";

const WALLET = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
const lookupSymbol = async (symbol: string) =>
  ["SOL", "USDC", "PYUSD"].find((s) => s.toLowerCase() === symbol.toLowerCase());
const lookupDecimals = async () => 6;

async function check(extensions: Record<string, readonly string[]>) {
  const violations: FieldViolation[] = [];
  const mintOnChain = async (symbol: string): Promise<MintFacts | undefined> =>
    extensions[symbol] === undefined ? undefined : { extensions: extensions[symbol] };
  const valid = await validateAgentConfig(
    swapKind,
    { wallet: WALLET, inputToken: "USDC", outputToken: "PYUSD", amount: 1, schedule: "daily" },
    lookupSymbol,
    violations,
    lookupDecimals,
    mintOnChain,
  );
  return { valid, violations };
}

describe("a swap's tokens on the chain", () => {
  it("accepts Token-2022 mints with other extensions", async () => {
    const { valid, violations } = await check({ USDC: [], PYUSD: ["MetadataPointer", "TokenMetadata"] });
    expect(violations).toEqual([]);
    expect(valid?.config.outputToken).toBe("PYUSD");
  });

  it.each([
    ["TransferFeeConfig", /takes a transfer fee \(TransferFeeConfig\)/],
    ["TransferHook", /runs a transfer hook \(TransferHook\)/],
  ])("refuses a mint with %s, naming the field", async (kind, reason) => {
    const { valid, violations } = await check({ USDC: [], PYUSD: ["MetadataPointer", kind] });
    expect(valid).toBeUndefined();
    expect(violations).toHaveLength(1);
    expect(violations[0]?.field).toBe("config.outputToken");
    expect(violations[0]?.description).toMatch(reason);
  });

  it("names both fields, and both extensions of one mint", async () => {
    const { violations } = await check({
      USDC: ["TransferHook"],
      PYUSD: ["TransferFeeConfig", "TransferHook"],
    });
    expect(violations.map((v) => v.field)).toEqual(["config.inputToken", "config.outputToken"]);
    expect(violations[1]?.description).toMatch(/transfer fee \(TransferFeeConfig\) and runs a transfer hook/);
  });

  it("a transfer's token may carry them: only swaps need the amount in to arrive whole", async () => {
    const violations: FieldViolation[] = [];
    const valid = await validateAgentConfig(
      transferKind,
      {
        source: WALLET,
        destination: "11111111111111111111111111111112",
        amount: 1,
        token: "PYUSD",
        schedule: "daily",
      },
      lookupSymbol,
      violations,
      lookupDecimals,
      async () => ({ extensions: ["TransferFeeConfig"] }),
    );
    expect(violations).toEqual([]);
    expect(valid).toBeDefined();
  });
});
