import { createDelegateKeys, type DelegateKeys } from "../chain/delegate-keys.ts";
import { generateDelegateSeed, loadDelegateSeed } from "../chain/delegate-seed.ts";
import type { SigningKey } from "../chain/ed25519-key.ts";
import { generateExecutorKey, loadExecutorKey } from "../chain/executor-key.ts";
import type { Config } from "../config.ts";
import type { EmbeddedLocalChain } from "../local-chain/index.ts";
import type { Logger } from "../logger.ts";

/** What the embedded chain's faucet gives a key it made: fees and rent for a long while. */
const EMBEDDED_EXECUTOR_LAMPORTS = 1_000n * 1_000_000_000n;

/**
 * The executor's key: EXECUTOR_KEYPAIR's file, or, with none given, one made now (funded by the
 * embedded chain's faucet; against a cluster the configuration already refused this unless
 * transfers are simulated). Only its address is ever logged.
 */
export async function executorKeyOf(
  config: Config,
  logger: Logger,
  localChain: EmbeddedLocalChain | undefined,
): Promise<SigningKey> {
  const path = config.transfers.keypairPath;
  if (path !== undefined) {
    const key = await loadExecutorKey(path);
    logger.info({ executor: key.address }, "the executor's key comes from EXECUTOR_KEYPAIR");
    return key;
  }
  const key = generateExecutorKey();
  if (localChain !== undefined) {
    // An airdrop the faucet cannot pay never lands (an emptied faucet in a saved state, say): the
    // log says what happened, not what was meant to.
    const err = await localChain.airdrop(key.address, EMBEDDED_EXECUTOR_LAMPORTS);
    if (err === null) {
      logger.info(
        { executor: key.address, lamports: EMBEDDED_EXECUTOR_LAMPORTS },
        "the executor's key was made for this run and funded by the embedded chain (set EXECUTOR_KEYPAIR to keep one)",
      );
    } else {
      logger.error(
        { executor: key.address, err },
        `the executor's key was made for this run, and the embedded chain's faucet could not fund it: runs cannot pay their fees until ${key.address} is funded (requestAirdrop, or surfnet_setAccount)`,
      );
    }
  } else {
    logger.warn(
      { executor: key.address },
      "the executor's key was made for this run: transfers are simulated",
    );
  }
  return key;
}

/**
 * The delegates' master secret: DELEGATE_SEED's file, or, with none given, one made now (against a
 * cluster with real transfers the configuration already refused that). Never logged; the secret is
 * wiped here once the delegates hold their own copy.
 */
export async function delegateKeysOf(config: Config, logger: Logger): Promise<DelegateKeys> {
  const path = config.transfers.delegateSeedPath;
  const secret = path === undefined ? generateDelegateSeed() : await loadDelegateSeed(path);
  const delegates = createDelegateKeys({ secret });
  secret.fill(0);
  if (path === undefined) {
    logger.info(
      "the delegates' secret was made for this run: approvals last until restart (set DELEGATE_SEED to keep them)",
    );
  } else {
    logger.info("the delegates' secret comes from DELEGATE_SEED: one delegate per owner and wallet");
  }
  return delegates;
}
