import type { ConfigReader } from "./config-reader.ts";
import { isHttpUrl } from "./config-urls.ts";
import type { SolanaConfig } from "./solana-config.ts";

/** How agents' runs (transfers and swaps) are carried out, and the guards beyond the owners' allowances. */
export interface TransferConfig {
  /** "chain": runs move real tokens; "simulated": they move nothing (dry runs, scheduler tests). */
  readonly executor: "chain" | "simulated";
  /** EXECUTOR_KEYPAIR: the service's key file (the fee payer); undefined makes one (embedded chain only). */
  readonly keypairPath: string | undefined;
  /**
   * DELEGATE_SEED: the file of the master secret every (owner, wallet) delegate is derived from;
   * undefined makes one (embedded chain only).
   */
  readonly delegateSeedPath: string | undefined;
  /** How long an agent may stay pending, waiting for its owner's approval, before it fails. */
  readonly approvalWaitMs: number;
  /** Largest value one run may move, in US dollars. */
  readonly maxUsdPerRun: number;
  /**
   * How many times a day one transfer agent's runs may create its destination's token account
   * (the executor pays its rent): a recipient who closes it after each run would take that rent.
   */
  readonly maxAccountCreationsPerDay: number;
  /** Largest value one agent may move per UTC day, in US dollars. */
  readonly maxUsdPerDay: number;
  /**
   * The executor's balance below which it is reported as unable to pay fees (in /readyz's body,
   * a log line and `executor_balance_lamports`), in lamports.
   */
  readonly executorMinLamports: number;
}

export function readTransfers(reader: ConfigReader, solana: SolanaConfig): TransferConfig {
  const { read, int, problems } = reader;
  const executor = read("TRANSFER_EXECUTOR").toLowerCase();
  if (executor !== "chain" && executor !== "simulated") {
    problems.push(`TRANSFER_EXECUTOR must be chain or simulated (got "${executor}")`);
  }
  const keypairPath = read("EXECUTOR_KEYPAIR");
  // On a cluster the executor pays fees and holds delegations: a key made up at start would be a
  // new, unfunded delegate on every restart, so the operator must give one.
  if (keypairPath === "" && executor === "chain" && solana.rpcUrl !== undefined && isHttpUrl(solana.rpcUrl)) {
    problems.push(
      "EXECUTOR_KEYPAIR is required when SOLANA_RPC_URL is set: the path of the executor's Solana keypair file (solana-keygen new -o executor.json; chmod 600)",
    );
  }
  const delegateSeedPath = read("DELEGATE_SEED");
  // Every delegate owners approve is derived from it: one made up at start would orphan every
  // approval on the next restart.
  if (
    delegateSeedPath === "" &&
    executor === "chain" &&
    solana.rpcUrl !== undefined &&
    isHttpUrl(solana.rpcUrl)
  ) {
    problems.push(
      "DELEGATE_SEED is required when SOLANA_RPC_URL is set: the path of a file of 32 random bytes the delegates are derived from (head -c 32 /dev/urandom > delegate.seed; chmod 600)",
    );
  }
  return {
    executor: executor as TransferConfig["executor"],
    keypairPath: keypairPath === "" ? undefined : keypairPath,
    delegateSeedPath: delegateSeedPath === "" ? undefined : delegateSeedPath,
    approvalWaitMs: int("APPROVAL_WAIT_HOURS", 1, 24 * 365) * 3_600_000,
    maxUsdPerRun: int("TRANSFER_MAX_USD_PER_RUN", 0, 1_000_000_000),
    maxUsdPerDay: int("TRANSFER_MAX_USD_PER_DAY", 0, 1_000_000_000),
    maxAccountCreationsPerDay: int("TRANSFER_MAX_ACCOUNT_CREATIONS_PER_DAY", 0, 1_000),
    // Up to a million SOL: more is no floor anyone means.
    executorMinLamports: int("EXECUTOR_MIN_LAMPORTS", 0, 1_000_000 * 1_000_000_000),
  };
}
