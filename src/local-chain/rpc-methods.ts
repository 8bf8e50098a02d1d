import { accountMethods } from "./account-methods.ts";
import { cheatcodeMethods } from "./cheatcodes.ts";
import { clusterMethods } from "./cluster-methods.ts";
import type { RpcMethod } from "./json-rpc-handler.ts";
import type { LocalChain } from "./local-chain.ts";
import { transactionMethods } from "./transaction-methods.ts";

/**
 * Every JSON-RPC method the local chain serves. Each call first brings the chain up to the wall
 * clock (a new slot and blockhash when one is due), as a validator would have produced them.
 */
export function createRpcMethods(options: { chain: LocalChain }): Record<string, RpcMethod> {
  const { chain } = options;
  const methods = {
    ...clusterMethods(chain),
    ...accountMethods(chain),
    ...transactionMethods(chain),
    ...cheatcodeMethods(chain),
  };
  return Object.fromEntries(
    Object.entries(methods).map(([name, method]) => [
      name,
      (params: readonly unknown[]) => {
        chain.tick();
        return method(params);
      },
    ]),
  );
}

/** The names of the methods, for bounded metric labels. */
export const LOCAL_CHAIN_METHODS: readonly string[] = [
  "getHealth",
  "getVersion",
  "getSlot",
  "getBlockHeight",
  "getLatestBlockhash",
  "isBlockhashValid",
  "getBalance",
  "getAccountInfo",
  "getMultipleAccounts",
  "getTokenAccountBalance",
  "getTokenSupply",
  "getTokenAccountsByOwner",
  "getMinimumBalanceForRentExemption",
  "sendTransaction",
  "simulateTransaction",
  "getSignatureStatuses",
  "getTransaction",
  "getSignaturesForAddress",
  "getFeeForMessage",
  "requestAirdrop",
  "surfnet_setAccount",
  "surfnet_setTokenAccount",
];
