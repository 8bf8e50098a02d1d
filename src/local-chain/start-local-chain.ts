import { createHash } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RpcTransport } from "@solana/kit";
import {
  CONFIG_VARIABLES,
  DEFAULT_LOCAL_CHAIN_PORT_LIMITS,
  DEFAULT_LOCAL_CHAIN_PUBSUB_LIMITS,
  type LocalChainPortLimits,
  type LocalChainPubSubLimits,
  pubsubAddressShare,
  type RateLimitConfig,
} from "../config.ts";
import type { Catalog } from "../token/catalog.ts";
import { chainPoolPricing } from "./pools/pool-prices.ts";
import { PUBSUB_PARAM_COUNTS, pubsubMethods } from "./pubsub/pubsub-methods.ts";
import type { PubSubServer } from "./pubsub/pubsub-server.ts";
import { createPubSubSubscriptions } from "./pubsub/pubsub-subscriptions.ts";
import { createJsonRpcHandler, type JsonRpcHandler } from "./rpc/json-rpc-handler.ts";
import { createRpcMethods, LOCAL_CHAIN_PARAM_COUNTS } from "./rpc/methods/rpc-methods.ts";
import { createPublicTurns } from "./rpc/public-turns.ts";
import { BLOCKHASH_VALID_BLOCKS, createBlockClock } from "./runtime/block-clock.ts";
import { createChainEvents } from "./runtime/chain-events.ts";
import { createLedger } from "./runtime/ledger.ts";
import { createLocalChain, createSvm, type LocalChain } from "./runtime/local-chain.ts";
import { createTokenAccountIndex } from "./runtime/token-account-index.ts";
import { startLocalChainPorts } from "./server/local-chain-ports.ts";
import { createChainDeltaFeed } from "./state/chain-delta-feed.ts";
import { type ChainKeys, createChainKeys, newChainKeySeed } from "./state/chain-keys.ts";
import { type ChainDelta, withDelta } from "./state/chain-mirror.ts";
import {
  type ChainState,
  defaultCacheDir,
  readChainState,
  readCheckedChainState,
  removeStaleTemporaries,
  writeChainState,
} from "./state/chain-state.ts";
import { createGenesis, GENESIS_VERSION, LOCAL_KEYS } from "./state/genesis.ts";
import { installChainKeys } from "./state/install-chain-keys.ts";
import { createStateSaver, type SaveOutcome } from "./state/state-saver.ts";
import { createLocalTransport } from "./worker/local-transport.ts";

export interface StartLocalChainOptions {
  readonly catalog: Catalog;
  /** Port of the JSON-RPC on 127.0.0.1 (0: any free port); undefined: no port, in-process only. */
  readonly port: number | undefined;
  /** File the chain is kept in across restarts; undefined: a fresh chain from the genesis. */
  readonly statePath: string | undefined;
  /**
   * The seed of a fresh chain's own keys (state/chain-keys.ts), when its state holds none: the embedded
   * chain's host passes the one its last start made, so a restart without a state file keeps its
   * pools. Default: a new random one. A state file's own seed always wins.
   */
  readonly keySeed?: string;
  readonly slotMs: number;
  /** Largest JSON-RPC request body the port reads. */
  readonly maxRequestBytes?: number;
  /** What one client can hold of the port (the answer bound applies in-process too); default: the configuration's defaults. */
  readonly limits?: Partial<LocalChainPortLimits>;
  /** Bounds of the PubSub port (the RPC port + 1); default: the configuration's defaults. */
  readonly pubsubLimits?: Partial<LocalChainPubSubLimits>;
  /**
   * A secret for the service's own PubSub path (see pubsub/pubsub-server.ts): the embedded chain's host
   * makes one; undefined (`npm run local-chain`): every connection is a client's.
   */
  readonly pubsubServiceToken?: string;
  /** Serve surfpool's cheatcodes (surfnet_*); default true. */
  readonly cheatcodes?: boolean;
  /** Host header names the port answers besides the loopback ones (see server/host-check.ts). */
  readonly allowedHosts?: readonly string[];
  /** Web origins that may call the ports besides pages on this machine (see server/cors.ts). */
  readonly allowedOrigins?: readonly string[];
  /**
   * Transactions the ledger keeps (those of the last 150 slots are always kept); older ones go,
   * as a validator's RPC forgets history. Default: LOCAL_SOLANA_HISTORY's default.
   */
  readonly history?: number;
  /** requestAirdrop per client address (a token bucket); default: the configuration's default. */
  readonly airdropLimit?: RateLimitConfig;
  /**
   * Bytes of account data the chain may hold; a transaction or cheatcode that would grow it past
   * them is refused. Default: LOCAL_SOLANA_MAX_ACCOUNT_BYTES's default.
   */
  readonly maxAccountBytes?: number;
  /**
   * Without `statePath`: the changes a worker that died had made since its genesis (the service's
   * mirror of them, see state/chain-mirror.ts), put back over the genesis, its clock included.
   */
  readonly restore?: ChainDelta;
  /** Told of what changes, a burst at a time (see state/chain-delta-feed.ts): the service mirrors it. */
  readonly onDelta?: (delta: ChainDelta) => void;
  /** Told how each save of the state went. */
  readonly onSaved?: (outcome: SaveOutcome) => void;
  /** Where a built genesis is kept for the next start (default: node_modules/.cache). */
  readonly cacheDir?: string;
  readonly now?: () => number;
  /** Progress worth a log line ("building the genesis", "saved"); `error` when saving failed. */
  readonly log?: (
    level: "info" | "warn" | "error",
    message: string,
    fields?: Record<string, unknown>,
  ) => void;
  readonly onRequest?: (method: string, outcome: "ok" | "error", code?: number) => void;
  readonly onRejected?: (reason: string) => void;
  readonly onUnexpected?: (error: unknown, method: string) => void;
}

export interface RunningLocalChain {
  readonly chain: LocalChain;
  /** The chain's own keys: its pools' and its mints' authority (kept in its state file). */
  readonly keys: ChainKeys;
  readonly handler: JsonRpcHandler;
  /** The in-process transport for @solana/kit (the service's own chain adapter uses it). */
  readonly transport: RpcTransport;
  /** http://127.0.0.1:port when a port serves, for wallets and scripts. */
  readonly url: string | undefined;
  /** The PubSub port (ws://127.0.0.1:port + 1) when a port serves. */
  readonly pubsub: PubSubServer | undefined;
  /** Saves the state now (when there is a state file); resolves when written. */
  save(): Promise<void>;
  /** Stops the port and saves the state a last time. */
  close(): Promise<void>;
}

/** Pause between a change and the save it triggers, so a burst of transactions is one write. */
const SAVE_DELAY_MS = 1000;
/** Transactions kept when nothing configures it (LOCAL_SOLANA_HISTORY's default). */
const DEFAULT_HISTORY = Number(CONFIG_VARIABLES.LOCAL_SOLANA_HISTORY);
/** Airdrops per client when nothing configures it (LOCAL_SOLANA_AIRDROPS_PER_SECOND, _BURST). */
const DEFAULT_AIRDROP_LIMIT: RateLimitConfig = {
  rate: Number(CONFIG_VARIABLES.LOCAL_SOLANA_AIRDROPS_PER_SECOND),
  burst: Number(CONFIG_VARIABLES.LOCAL_SOLANA_AIRDROP_BURST),
};
const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
const MAX_BATCH = 100;
/** Account data the chain holds at most when nothing configures it (LOCAL_SOLANA_MAX_ACCOUNT_BYTES). */
const DEFAULT_MAX_ACCOUNT_BYTES = Number(CONFIG_VARIABLES.LOCAL_SOLANA_MAX_ACCOUNT_BYTES);
/** Subscriptions of the whole chain when nothing configures it (LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS). */
const DEFAULT_MAX_SUBSCRIPTIONS = Number(CONFIG_VARIABLES.LOCAL_SOLANA_PUBSUB_MAX_SUBSCRIPTIONS);

/**
 * Starts the embedded local chain: its state from `statePath` if that file exists, else from the
 * genesis (built once per machine, ~3 s, and kept in the cache directory, then loaded in well under
 * a second), the JSON-RPC handler, the in-process transport and, when `port` is given, the HTTP port
 * on 127.0.0.1. A fresh chain's seeded history is placed to end now; a saved chain keeps its times.
 */
export async function startLocalChain(options: StartLocalChainOptions): Promise<RunningLocalChain> {
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => {});
  if (options.statePath !== undefined) await removeStaleTemporaries(options.statePath);
  // A damaged file throws (ChainStateError, naming it) and is left as it is: nothing saves over it.
  const read = options.statePath === undefined ? undefined : await readCheckedChainState(options.statePath);
  const saved = read?.state;
  let state: ChainState;
  let clockState: ChainState["clock"];
  if (saved !== undefined) {
    state = saved;
    clockState = saved.clock;
    log("info", "local chain state loaded", { entries: saved.ledger.length });
    if (read?.checked === false) {
      // Written before state files had a checksum: nothing can tell whether it was damaged since.
      // The next save writes it with one.
      log("warn", "the local chain state file has no checksum (an older format): loaded unchecked", {
        state: options.statePath,
      });
    }
  } else if (options.restore !== undefined) {
    // A worker started again: the chain it had, from the genesis and what changed since.
    // The keys the chain had come back with it (the host keeps their seed): the mirror holds what
    // their install wrote, so it is not done again.
    state = {
      ...withDelta(await loadGenesis(options, log), options.restore),
      ...(options.keySeed === undefined ? {} : { keySeed: options.keySeed }),
    };
    clockState = state.clock;
    log("info", "local chain restored from the service's mirror of it", {
      accounts: options.restore.accounts.length,
      entries: options.restore.ledger.length,
    });
  } else {
    state = await loadGenesis(options, log);
    // The seeded history ends now: the chain's slot 0 is that many slots ago.
    clockState = {
      ...state.clock,
      slotMs: options.slotMs,
      genesisMs: now() - state.clock.slot * options.slotMs,
    };
  }
  // A state without keys of its own (the genesis, or a file saved before chains had them) gets
  // them now, before anyone is served.
  const keyless = state.keySeed === undefined;
  const keys = createChainKeys(state.keySeed ?? options.keySeed ?? newChainKeySeed());
  if (keyless && saved !== undefined) {
    log(
      "warn",
      "the local chain state holds no keys of its own (saved by an older version): its pools are made anew",
      { state: options.statePath },
    );
  }
  const svm = createSvm(state.accounts);
  const clock = createBlockClock({ state: clockState, now });
  const ledger = createLedger({ saved: state.ledger, maxEntries: options.history ?? DEFAULT_HISTORY });
  const statePath = options.statePath;
  const saver =
    statePath === undefined
      ? undefined
      : createStateSaver({
          path: statePath,
          snapshot: () => ({
            accounts: chain.savedAccounts(),
            clock: clock.state(),
            ledger: ledger.entries(),
            keySeed: keys.seed,
          }),
          delayMs: SAVE_DELAY_MS,
          dirty: keyless,
          ...(options.onSaved === undefined ? {} : { onSaved: options.onSaved }),
          onError: (error) => log("error", "the local chain state could not be saved", { err: error }),
        });
  const events = createChainEvents({
    onError: (error) => options.onUnexpected?.(error, "notification"),
  });
  const chain = createLocalChain({
    events,
    svm,
    clock,
    ledger,
    faucet: LOCAL_KEYS.faucet,
    ...(saver === undefined ? {} : { onChange: saver.changed }),
    saved: state.accounts,
    keepSavedAccounts: saver !== undefined,
    maxAccountBytes: options.maxAccountBytes ?? DEFAULT_MAX_ACCOUNT_BYTES,
  });
  // Fed before the keys are installed: the mirror holds the pools and the mints' new powers too,
  // so that a worker started again on it needs no second install (which would seed the pools anew).
  const feed =
    options.onDelta === undefined
      ? undefined
      : createChainDeltaFeed({ chain, events, post: options.onDelta, startedWith: startedWith(state) });
  if (keyless) {
    await installChainKeys(chain, {
      catalog: options.catalog,
      keys,
      genesisAuthority: LOCAL_KEYS.authority.address,
    });
  }
  chain.tick();
  // A saved ledger longer than the window (a smaller LOCAL_SOLANA_HISTORY now) is cut at once.
  ledger.prune(clock.slot - BLOCKHASH_VALID_BLOCKS);
  const tokenIndex = createTokenAccountIndex({ chain, events });
  const methods = createRpcMethods({
    chain,
    cheatcodes: options.cheatcodes ?? true,
    pricing: await chainPoolPricing(options.catalog, keys),
    airdropLimit: options.airdropLimit ?? DEFAULT_AIRDROP_LIMIT,
    tokenIndex,
  });
  const limits = { ...DEFAULT_LOCAL_CHAIN_PORT_LIMITS, ...options.limits };
  const handler = createJsonRpcHandler({
    methods,
    paramCounts: LOCAL_CHAIN_PARAM_COUNTS,
    maxBatch: MAX_BATCH,
    maxAnswerBytes: limits.maxAnswerBytes,
    maxRequestMs: limits.maxRequestMs,
    // The port's clients take turns on the chain's thread; the service's own requests go first.
    turns: createPublicTurns(),
    ...(options.onRequest === undefined ? {} : { onRequest: options.onRequest }),
    ...(options.onUnexpected === undefined ? {} : { onUnexpected: options.onUnexpected }),
  });
  const pubsubLimits = { ...DEFAULT_LOCAL_CHAIN_PUBSUB_LIMITS, ...options.pubsubLimits };
  const subscriptions = createPubSubSubscriptions({
    chain,
    events,
    slotMs: clockState.slotMs,
    maxNotificationBytes: limits.maxAnswerBytes,
    ...(options.onRejected === undefined
      ? {}
      : { onDropped: (reason) => options.onRejected?.(`pubsub_${reason}`) }),
  });
  const ports =
    options.port === undefined
      ? undefined
      : await startLocalChainPorts({
          handler,
          pubsubHandler: createJsonRpcHandler({
            methods: pubsubMethods({
              subscriptions,
              maxSubscriptionsPerConnection: pubsubLimits.maxSubscriptionsPerConnection,
              maxSubscriptions: pubsubLimits.maxSubscriptions ?? DEFAULT_MAX_SUBSCRIPTIONS,
              maxSubscriptionsPerAddress: pubsubAddressShare(pubsubLimits),
              onRefused: (reason) => options.onRejected?.(`pubsub_${reason}`),
            }),
            paramCounts: PUBSUB_PARAM_COUNTS,
            maxBatch: MAX_BATCH,
            maxAnswerBytes: limits.maxAnswerBytes,
          }),
          subscriptions,
          port: options.port,
          maxRequestBytes: options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES,
          limits,
          pubsubLimits,
          ...(options.allowedHosts === undefined ? {} : { allowedHosts: options.allowedHosts }),
          ...(options.allowedOrigins === undefined ? {} : { allowedOrigins: options.allowedOrigins }),
          ...(options.pubsubServiceToken === undefined
            ? {}
            : { pubsubServiceToken: options.pubsubServiceToken }),
          ...(options.onRejected === undefined ? {} : { onRejected: options.onRejected }),
          ...(options.onUnexpected === undefined ? {} : { onUnexpected: options.onUnexpected }),
        });
  await saver?.save();
  return {
    chain,
    keys,
    handler,
    transport: createLocalTransport(handler),
    url: ports?.rpc.url,
    pubsub: ports?.pubsub,
    save: async () => saver?.save(),
    async close() {
      await ports?.close();
      subscriptions.close();
      tokenIndex.close();
      feed?.close();
      await saver?.close();
    },
  };
}

/**
 * Builds the genesis into the cache if it is not there yet, so that the next start loads it
 * (`npm ci` runs this through the postinstall script; the tests' global setup too).
 */
export async function prepareGenesis(
  options: Pick<StartLocalChainOptions, "catalog" | "slotMs" | "cacheDir" | "log">,
): Promise<void> {
  await loadGenesis(options, options.log ?? (() => {}));
}

/** The genesis from the cache, or built (and cached for the next start). */
async function loadGenesis(
  options: Pick<StartLocalChainOptions, "catalog" | "slotMs" | "cacheDir">,
  log: NonNullable<StartLocalChainOptions["log"]>,
): Promise<ChainState> {
  const key = genesisKey(options.catalog);
  const directories = [options.cacheDir ?? defaultCacheDir(), join(tmpdir(), "token-agent-service")];
  for (const directory of directories) {
    const cached = await readChainState(join(directory, `local-chain-genesis-${key}.bin`)).catch(
      () => undefined,
    );
    // The genesis is public and holds no keys: a seed in a cached file (a file put there by
    // someone else, say) is never taken, so every chain makes its own.
    if (cached !== undefined)
      return { accounts: cached.accounts, clock: cached.clock, ledger: cached.ledger };
  }
  log("info", "building the local chain's genesis (once per machine; later starts load it)");
  const started = performance.now();
  const genesis = await createGenesis({ catalog: options.catalog, slotMs: options.slotMs });
  for (const directory of directories) {
    try {
      await mkdir(directory, { recursive: true });
      // Readable by all: the genesis is public (an image builds it as root and runs as another user).
      await writeChainState(join(directory, `local-chain-genesis-${key}.bin`), genesis, 0o644);
      log("info", "local chain genesis built", {
        ms: Math.round(performance.now() - started),
        cache: directory,
      });
      return genesis;
    } catch {
      // Not writable here (a read-only image, say): try the next place, or keep it in memory only.
    }
  }
  log("warn", "the local chain genesis could not be cached; it is built on every start");
  return genesis;
}

/** What the genesis depends on: its own version, LiteSVM's (its programs ran it) and the catalog's tokens. */
function genesisKey(catalog: Catalog): string {
  const require = createRequire(import.meta.url);
  const litesvm = (require("litesvm/package.json") as { version: string }).version;
  const tokens = catalog.tokens.map(({ mint, symbol, name, decimals }) => [mint, symbol, name, decimals]);
  return createHash("sha256")
    .update(JSON.stringify([GENESIS_VERSION, litesvm, tokens]))
    .digest("hex")
    .slice(0, 16);
}

/** Whether `state` holds an account at an address: what a chain that starts from it started with. */
function startedWith(state: ChainState): (address: string) => boolean {
  const addresses = new Set(state.accounts.map(([address]) => address));
  return (address) => addresses.has(address);
}
