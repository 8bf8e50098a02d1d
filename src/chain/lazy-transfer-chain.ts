import type { TransferChain } from "./chain.ts";

/**
 * A TransferChain made on its first use: the kit adapter behind it imports @solana-program/token,
 * and with it all of @solana/kit (17 MB in a process), which a process that has sent nothing yet
 * need not carry.
 */
export function createLazyTransferChain(load: () => Promise<TransferChain>): TransferChain {
  let chain: Promise<TransferChain> | undefined;
  const get = () => {
    chain ??= load().catch((error: unknown) => {
      chain = undefined;
      throw error;
    });
    return chain;
  };
  return {
    getTokenAccount: async (address, signal) => (await get()).getTokenAccount(address, signal),
    getAccounts: async (addresses, signal) => (await get()).getAccounts(addresses, signal),
    getTokenAccounts: async (addresses, signal) => (await get()).getTokenAccounts(addresses, signal),
    getLatestBlockhash: async (signal) => (await get()).getLatestBlockhash(signal),
    getBlockHeight: async (signal) => (await get()).getBlockHeight(signal),
    getSignatureStatuses: async (signatures, signal, options) =>
      (await get()).getSignatureStatuses(signatures, signal, options),
    simulateTransaction: async (transaction, signal, options) =>
      (await get()).simulateTransaction(transaction, signal, options),
    sendTransaction: async (transaction, signal, options) =>
      (await get()).sendTransaction(transaction, signal, options),
  };
}
