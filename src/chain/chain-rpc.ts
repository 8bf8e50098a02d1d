import {
  createRpc,
  createSolanaRpcApi,
  DEFAULT_RPC_CONFIG,
  type Rpc,
  type RpcApi,
  type RpcPlan,
  type RpcTransport,
  type SolanaRpcApi,
} from "@solana/rpc";

/**
 * A JSON-RPC answer whose result is already what kit's RPC makes of it (each integer a bigint,
 * but those kit keeps as numbers). The embedded chain's thread answers the service so (see
 * local-chain/worker/kit-shape.ts), having walked the answer once anyway. A class, not a field:
 * no answer read from a socket can claim to be one. Kit's own RPC reads it as any answer (its walk
 * gives back the same value), so every consumer of the transport stays correct.
 */
export class KitShapedAnswer {
  readonly jsonrpc = "2.0";
  readonly result: unknown;
  constructor(result: unknown) {
    this.result = result;
  }
}

/** What kit's response transformer is handed in place of a shaped answer: cheap to walk. */
const STAND_IN = Object.freeze({ jsonrpc: "2.0", result: null });

/**
 * Kit's Solana RPC on `transport` (kit's createSolanaRpcFromTransport, the same API and request
 * transforms), except that a KitShapedAnswer's result is taken as it is: kit would walk it again
 * and build every node anew to the same value.
 */
export function createChainRpc(transport: RpcTransport): Rpc<SolanaRpcApi> {
  const kit = createSolanaRpcApi(DEFAULT_RPC_CONFIG);
  const api = new Proxy(kit, {
    get(target, property, receiver) {
      const method = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== "string" || typeof method !== "function") return method;
      return (...params: unknown[]): RpcPlan<unknown> => {
        const plan = method(...params) as RpcPlan<unknown>;
        return Object.freeze({
          async execute(config: Parameters<RpcPlan<unknown>["execute"]>[0]) {
            let shaped: KitShapedAnswer | undefined;
            const result = await plan.execute({
              ...config,
              transport: (async (request) => {
                const response = await config.transport(request);
                if (!(response instanceof KitShapedAnswer)) return response;
                shaped = response;
                return STAND_IN;
              }) as RpcTransport,
            });
            return shaped === undefined ? result : shaped.result;
          },
        });
      };
    },
  }) as RpcApi<SolanaRpcApi>;
  return createRpc({ api, transport });
}
