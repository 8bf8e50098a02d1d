import {
  innerInstructionsConfigs,
  jsonParsedAccountsConfigs,
  jsonParsedTokenAccountsConfigs,
  KEYPATH_WILDCARD,
  messageConfig,
  tokenBalancesConfigs,
} from "@solana/rpc-transformers";

type KeyPath = readonly (string | number | typeof KEYPATH_WILDCARD)[];

/**
 * Where kit keeps an integer of a method's result as a number (every other integer becomes a
 * bigint): @solana/rpc-api's allowed numeric key paths, for the methods the service calls on the
 * embedded chain at every run. The table is kit's own (rpc-api's getAllowedNumericKeypaths, which
 * it does not export), built from the pieces it does export; test/kit-shape.test.ts holds each
 * method's answers to kit's own response transformer. A method not listed is not shaped here.
 */
function allowedNumericKeyPaths(): Record<string, readonly KeyPath[]> {
  const W = KEYPATH_WILDCARD;
  const tokenBalances = (...prefix: KeyPath) =>
    tokenBalancesConfigs.flatMap((c) => [
      [...prefix, "preTokenBalances", W, ...c],
      [...prefix, "postTokenBalances", W, ...c],
    ]);
  const none: KeyPath[] = [];
  return {
    getAccountInfo: jsonParsedAccountsConfigs.map((c) => ["value", ...c]),
    getMultipleAccounts: jsonParsedAccountsConfigs.map((c) => ["value", W, ...c]),
    getSignaturesForAddress: [[W, "transactionIndex"]],
    getTokenAccountBalance: [
      ["value", "decimals"],
      ["value", "uiAmount"],
    ],
    getTokenAccountsByOwner: jsonParsedTokenAccountsConfigs.map((c) => ["value", W, "account", ...c]),
    getTokenSupply: [
      ["value", "decimals"],
      ["value", "uiAmount"],
    ],
    getTransaction: [
      ...tokenBalances("meta"),
      ["meta", "rewards", W, "commission"],
      ...innerInstructionsConfigs.map((c) => ["meta", "innerInstructions", W, ...c]),
      ...messageConfig.map((c) => ["transaction", "message", ...c]),
      ["version"],
    ],
    simulateTransaction: [
      ["value", "loadedAccountsDataSize"],
      ...jsonParsedAccountsConfigs.map((c) => ["value", "accounts", W, ...c]),
      ...innerInstructionsConfigs.map((c) => ["value", "innerInstructions", W, ...c]),
      ...tokenBalances("value"),
    ],
    // Kit keeps no integer of these as a number.
    getBalance: none,
    getBlockHeight: none,
    getEpochInfo: none,
    getFeeForMessage: none,
    getLatestBlockhash: none,
    getMinimumBalanceForRentExemption: none,
    getSignatureStatuses: none,
    getSlot: none,
    isBlockhashValid: none,
    sendTransaction: none,
  };
}

/** A trie of key paths: a key's node, any array index's node, and whether a path ends here. */
interface PathNode {
  readonly keys: Map<string, PathNode>;
  index: PathNode | undefined;
  end: boolean;
}

const newNode = (): PathNode => ({ keys: new Map(), index: undefined, end: false });

function trieOf(paths: readonly KeyPath[]): PathNode {
  const root = newNode();
  for (const path of paths) {
    let node = root;
    for (const part of path) {
      if (part === KEYPATH_WILDCARD) {
        node.index ??= newNode();
        node = node.index;
      } else {
        // Kit's paths name object keys only: a literal part never matches an array index.
        const key = String(part);
        let next = node.keys.get(key);
        if (next === undefined) {
          next = newNode();
          node.keys.set(key, next);
        }
        node = next;
      }
    }
    node.end = true;
  }
  return root;
}

/** A method's result as kit shapes it, from the chain's answer value; undefined for a method not listed. */
export type KitShape = (result: unknown) => unknown;

/**
 * Shapes the chain's answers as kit's RPC would read them, in one walk: what JSON text does to
 * them (an undefined field gone, an undefined item null) and what kit's response transformer then
 * does (an integer on an allowed path a number, every other a bigint). The embedded chain's thread
 * answers the service in this shape, so the service's thread does not walk each answer again
 * (kit's walk made a new key-path array per node: a fifth of that thread's allocation in the
 * swap bench).
 */
export function createKitShapes(): (method: string) => KitShape | undefined {
  const tries = new Map<string, PathNode>();
  for (const [method, paths] of Object.entries(allowedNumericKeyPaths())) tries.set(method, trieOf(paths));
  return (method) => {
    const trie = tries.get(method);
    return trie === undefined ? undefined : (result) => shaped(result, trie);
  };
}

/**
 * A value as kit reads JSON text (parseJsonWithBigInts): every integer a bigint, fractions
 * numbers, an undefined field gone, an undefined item null. The walk above with no key path.
 */
export function kitRead(value: unknown): unknown {
  return shaped(value, undefined);
}

function shaped(value: unknown, node: PathNode | undefined): unknown {
  switch (typeof value) {
    case "number":
      return Number.isInteger(value) && node?.end !== true ? BigInt(value) : value;
    case "bigint":
      return node?.end === true ? Number(value) : value;
    case "object": {
      if (value === null) return null;
      if (Array.isArray(value)) {
        const inner = node?.index;
        const out = new Array(value.length);
        for (let i = 0; i < value.length; i++) {
          const item = value[i];
          out[i] = item === undefined ? null : shaped(item, inner);
        }
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        const inner = (value as Record<string, unknown>)[key];
        if (inner !== undefined) out[key] = shaped(inner, node?.keys.get(key));
      }
      return out;
    }
    default:
      return value;
  }
}
