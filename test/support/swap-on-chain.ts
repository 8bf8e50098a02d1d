import type { Address } from "@solana/kit";
import { type AgentOnChain, startAgentOnChain, stopAgentOnChain } from "./agent-on-chain.ts";
import {
  type JupiterSwapServer,
  type JupiterSwapServerOptions,
  startJupiterSwapServer,
} from "./jupiter-swap-server.ts";
import { startLateForwarder } from "./late-forwarder.ts";

/** The service on its embedded chain, with the Jupiter-shaped test server as its Swap API. */
export interface SwapOnChain extends AgentOnChain {
  readonly jupiter: JupiterSwapServer;
  /** Drops the test's database (on the mongo store), closes the service, the Swap API and its forwarder. */
  stop(): Promise<void>;
}

/**
 * Starts the service with `env` (a funded owner, as startAgentOnChain) and the Jupiter-shaped test
 * server with `jupiter`'s pools on the service's chain. The service reads JUPITER_SWAP_URL at
 * start and the test server needs the service's chain, so the URL is a late forwarder's, pointed
 * at the test server once both are up. `storeName` ("memory" or "mongo") says what stop() drops.
 */
export async function startSwapOnChain(options: {
  env: Record<string, string>;
  funds: readonly [mint: Address, units: bigint][];
  jupiter: Omit<JupiterSwapServerOptions, "rpcUrl">;
  storeName?: string;
}): Promise<SwapOnChain> {
  const forwarder = await startLateForwarder();
  let onChain: AgentOnChain | undefined;
  try {
    onChain = await startAgentOnChain({ ...options.env, JUPITER_SWAP_URL: forwarder.url }, options.funds);
    const jupiter = await startJupiterSwapServer({
      ...options.jupiter,
      rpcUrl: onChain.server.localChain?.url as string,
    });
    forwarder.forwardTo(jupiter.url);
    const { server } = onChain;
    return {
      ...onChain,
      jupiter,
      async stop() {
        await stopAgentOnChain(options.storeName ?? "memory", server);
        await jupiter.close();
        await forwarder.close();
      },
    };
  } catch (error) {
    await stopAgentOnChain(options.storeName ?? "memory", onChain?.server);
    await forwarder.close();
    throw error;
  }
}
