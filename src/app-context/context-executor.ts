/**
 * Who carries out agent runs: each kind's own executor on the chain when TRANSFER_EXECUTOR=chain (the
 * executor's balance then read after each run and periodically), else the simulated executor.
 */
import type { Chain, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import { createExecutorBalance, type ExecutorBalance } from "../chain/executor-balance.ts";
import type { SwapRefusal } from "../chain/swap-refusals.ts";
import type { Config } from "../config.ts";
import type { KindServices } from "../kinds/agent-kind.ts";
import type { AgentKinds } from "../kinds/agent-kinds.ts";
import { createKindsExecutor } from "../kinds/kinds-executor.ts";
import type { Logger } from "../logger.ts";
import type { Executor } from "../scheduler/executor.ts";
import type { SendHooks } from "../scheduler/sent-transactions.ts";
import { createSimulatedExecutor } from "../scheduler/simulated-executor.ts";
import type { SwapApi } from "../token/jupiter-swap-api.ts";
import type { PriceSource } from "../token/token-source.ts";

export interface ContextExecutorOptions {
  readonly config: Config;
  /** The agent kinds, each with its run. */
  readonly kinds: AgentKinds;
  readonly logger: Logger;
  readonly chain: Chain;
  /** The chain as runs write to it. */
  readonly transfers: TransferChain;
  /** The service's own key: the fee payer of every run. */
  readonly executorKey: SigningKey;
  /** The delegates owners' wallets approve, one per (owner, wallet). */
  readonly delegates: DelegateKeys;
  /** Where swap runs get their routes (JUPITER_SWAP_URL). */
  readonly swaps: SwapApi;
  readonly prices: PriceSource;
  readonly mintOf: (symbol: string) => string | undefined;
  /** Hears of swap routes refused before signing. */
  readonly onSwapRefused?: ((reason: SwapRefusal) => void) | undefined;
  /** Hears of the rent the executor paid for each account a run created. */
  readonly onRentSpent?: ((lamports: number) => void) | undefined;
  /** Test hooks around a run's first send (transfers and swaps). */
  readonly transferHooks?: SendHooks | undefined;
  /** An executor to use instead (tests). */
  readonly executor?: Executor | undefined;
}

export interface ContextExecutor {
  readonly executor: Executor;
  /** The fee payer's balance, when runs move real tokens. */
  readonly executorBalance: ExecutorBalance | undefined;
}

export function createContextExecutor(options: ContextExecutorOptions): ContextExecutor {
  const { config, logger, chain, transfers, executorKey, delegates, prices, mintOf } = options;
  const simulated = createSimulatedExecutor({
    kinds: options.kinds,
    tokens: prices,
    mintOf,
    faults: {
      failureRate: config.scheduler.simulatedFailureRate,
      hangRate: config.scheduler.simulatedHangRate,
      latencyMs: config.scheduler.simulatedLatencyMs,
    },
  });
  const realTransfers = config.transfers.executor === "chain";
  const executorBalance = realTransfers
    ? createExecutorBalance({
        address: executorKey.address,
        read: (signal) => chain.getBalance(executorKey.address, signal),
        minLamports: BigInt(config.transfers.executorMinLamports),
        intervalMs: EXECUTOR_BALANCE_INTERVAL_MS,
        timeoutMs: config.solana.timeoutMs,
        onChange(problem, lamports) {
          if (problem !== undefined) logger.warn({ executor: executorKey.address, lamports }, problem);
          else logger.info({ executor: executorKey.address, lamports }, "the executor can pay fees again");
        },
      })
    : undefined;
  const services: KindServices = {
    chain,
    transfers,
    executorKey,
    delegates,
    mintOf,
    prices,
    swaps: options.swaps,
    limits: {
      caps: { perRunUsd: config.transfers.maxUsdPerRun, perDayUsd: config.transfers.maxUsdPerDay },
      maxAccountCreationsPerDay: config.transfers.maxAccountCreationsPerDay,
      swaps: {
        allowedPrograms: config.swaps.allowedPrograms,
        maxFeeLamports: config.swaps.maxFeeLamports,
        maxPriceDeviationBps: config.swaps.maxPriceDeviationBps,
      },
    },
    onSwapRefused: options.onSwapRefused,
    onRentSpent: options.onRentSpent,
    hooks: options.transferHooks,
  };
  const executor =
    options.executor ??
    createKindsExecutor(options.kinds, (kind) =>
      executorBalance !== undefined
        ? // Every run spends the executor's lamports: read them again (throttled) after it.
          afterEachRun(kind.createExecutor(services), () => executorBalance.refreshSoon())
        : simulated,
    );
  return { executor, executorBalance };
}

/** How often the executor's balance is read besides after runs: a getBalance, cheap for any cluster. */
const EXECUTOR_BALANCE_INTERVAL_MS = 30_000;

/** `executor`, telling `after` once each run is over, whatever its outcome. */
function afterEachRun(executor: Executor, after: () => void): Executor {
  return {
    async execute(execution) {
      try {
        return await executor.execute(execution);
      } finally {
        after();
      }
    },
    ...(executor.upstreamOf === undefined ? {} : { upstreamOf: (agent) => executor.upstreamOf?.(agent) }),
  };
}
