/** Valid agent requests and a plain Connect JSON create, for tests that need agents to exist. */

export const TRANSFER_CONFIG = {
  source: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
  destination: "2ojv9BAiHUrvsm9gxDe7fJSzbNZSJcxZvf8dqmWGHG8S",
  amount: 1.5,
  token: "USDC",
  schedule: "daily",
};

/** A CreateAgent request for an hourly swap (simulated: it moves nothing). */
export const SWAP = {
  type: "swap",
  config: {
    wallet: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
    inputToken: "USDC",
    outputToken: "SOL",
    amount: 100,
    slippageBps: 100,
    schedule: "hourly",
  },
};

/** A CreateAgent request for a transfer of `amount` USDC. */
export const transfer = (amount: number) => ({ type: "transfer", config: { ...TRANSFER_CONFIG, amount } });

/** CreateAgent over the Connect protocol with JSON, optionally under an idempotency key. */
export async function createOverJson(baseUrl: string, body: object, key?: string) {
  const res = await fetch(`${baseUrl}/agent.v1.AgentService/CreateAgent`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}
