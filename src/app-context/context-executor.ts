/**
 * Who carries out agent runs: transfers and swaps on the chain when TRANSFER_EXECUTOR=chain (the
 * executor's balance then read after each run and periodically), else the simulated executor.
 */
import type { Chain, TransferChain } from "../chain/chain.ts";
import type { DelegateKeys } from "../chain/delegate-keys.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import { createExecutorBalance, type ExecutorBalance } from "../chain/executor-balance.ts";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { Executor } from "../scheduler/executor.ts";
import { createExecutorByType } from "../scheduler/executor-by-type.ts";
import { createSimulatedExecutor } from "../scheduler/simulated-executor.ts";
import { createSwapExecutor, type SwapRefusal } from "../scheduler/swap-executor.ts";
import { createTransferExecutor, type TransferHooks } from "../scheduler/transfer-executor.ts";
import type { SwapApi } from "../token/jupiter-swap-api.ts";
import type { PriceSource } from "../token/token-source.ts";

export interface ContextExecutorOptions {
  readonly config: Config;
  readonly logger: Logger;
  readonly chain: Chain;
  /** The chain as transfers write to it. */
  readonly transfers: TransferChain;
  /** The service's own key: the fee payer of transfers. */
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
  /** Test hooks around a transfer's first send. */
  readonly transferHooks?: TransferHooks | undefined;
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
  const executor =
    options.executor ??
    createExecutorByType({
      transfer:
        executorBalance !== undefined
          ? afterEachRun(
              createTransferExecutor({
                chain,
                transfers,
                executor: executorKey,
                delegates,
                mintOf,
                prices,
                caps: { perRunUsd: config.transfers.maxUsdPerRun, perDayUsd: config.transfers.maxUsdPerDay },
                maxAccountCreationsPerDay: config.transfers.maxAccountCreationsPerDay,
                ...(options.onRentSpent === undefined ? {} : { onRentSpent: options.onRentSpent }),
                ...(options.transferHooks === undefined ? {} : { hooks: options.transferHooks }),
              }),
              // Every run spends the executor's lamports: read them again (throttled) after it.
              () => executorBalance.refreshSoon(),
            )
          : simulated,
      swap:
        executorBalance !== undefined
          ? afterEachRun(
              createSwapExecutor({
                chain,
                transfers,
                swaps: options.swaps,
                executor: executorKey,
                delegates,
                mintOf,
                allowedPrograms: config.swaps.allowedPrograms,
                maxFeeLamports: config.swaps.maxFeeLamports,
                maxPriceDeviationBps: config.swaps.maxPriceDeviationBps,
                prices,
                caps: { perRunUsd: config.transfers.maxUsdPerRun, perDayUsd: config.transfers.maxUsdPerDay },
                ...(options.onSwapRefused === undefined ? {} : { onRefused: options.onSwapRefused }),
                ...(options.transferHooks === undefined ? {} : { hooks: options.transferHooks }),
              }),
              () => executorBalance.refreshSoon(),
            )
          : simulated,
    });
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
