import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Starts `server` listening on `host` and `port` (0: any free port) and resolves with the port it
 * got, or rejects with the listen error (EADDRINUSE among them). The local chain's JSON-RPC and
 * PubSub ports start the same way, and startLocalChainPorts reads that rejection to try another
 * pair of ports, so both servers share this one start rather than two copies that could drift.
 */
export async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
