import { type AddressInfo, connect, createServer, type Server } from "node:net";

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("could not read a free port"))));
    });
  });
}

/**
 * A port on 127.0.0.1 whose next port is free too, as the local chain needs: it serves JSON-RPC
 * on the port and PubSub on the port + 1 (where Solana's clients look for it). `freePort()` alone
 * left the + 1 to chance, and a busy run took it (EADDRINUSE at the chain's start). Both are held
 * until both are known free. Where the caller can let the process choose (port 0, read back from
 * its log), prefer that: nothing can take the ports between this check and the bind.
 */
export async function freePortPair(attempts = 50): Promise<number> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const first = await listenOn(0);
    const port = (first.address() as AddressInfo).port;
    const second = port < 65535 ? await listenOn(port + 1).catch(() => undefined) : undefined;
    await Promise.all([first, second].map((server) => server && closeServer(server)));
    if (second !== undefined) return port;
  }
  throw new Error(`no two neighbouring free ports on 127.0.0.1 in ${attempts} tries`);
}

function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Whether something on 127.0.0.1:`port` accepts a connection (within a second). */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const answer = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(1_000);
    socket.once("connect", () => answer(true));
    socket.once("timeout", () => answer(false));
    socket.once("error", () => answer(false));
  });
}

/** Resolves once 127.0.0.1:`port` accepts connections; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await accepts(port)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing accepted connections on 127.0.0.1:${port} within ${timeoutMs} ms`);
}
