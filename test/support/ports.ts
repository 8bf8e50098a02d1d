import { connect, createServer } from "node:net";

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
