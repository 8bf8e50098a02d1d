import { readFileSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Server } from "node:net";

/**
 * Ports the tests choose for processes they start are drawn below the kernel's ephemeral range
 * (`ip_local_port_range`, 32768-60999 here). A port from `listen(0)` lies inside it, and so does
 * the local port of every outgoing connection, and this suite opens thousands a minute: a port
 * found free and bound by a child a second later was once taken in between (the chain's "is in
 * use", a red CI run). Below the range only an explicit bind can take it.
 */
const CHOSEN_PORTS = chosenPortRange();

function chosenPortRange(): { low: number; high: number } | undefined {
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    // Clear of the well-known ports and of what developers run by hand (8080, 8899, 27017, ...).
    const range = { low: 20_000, high: (low ?? 0) - 2 };
    return range.high - range.low >= 1_000 ? range : undefined;
  } catch {
    return undefined;
  }
}

/** A random port of CHOSEN_PORTS, or 0 (the kernel's choice) where there is none. */
function candidate(): number {
  if (CHOSEN_PORTS === undefined) return 0;
  return CHOSEN_PORTS.low + Math.floor(Math.random() * (CHOSEN_PORTS.high - CHOSEN_PORTS.low + 1));
}

/** A TCP port on 127.0.0.1 that nothing listens on right now (below the ephemeral range, see above). */
export async function freePort(attempts = 50): Promise<number> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const server = await listenOn(candidate()).catch(() => undefined);
    if (server === undefined) continue;
    const port = (server.address() as AddressInfo).port;
    await closeServer(server);
    return port;
  }
  throw new Error(`no free port on 127.0.0.1 in ${attempts} tries`);
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
    const first = await listenOn(candidate()).catch(() => undefined);
    if (first === undefined) continue;
    const port = (first.address() as AddressInfo).port;
    const second = port < 65535 ? await listenOn(port + 1).catch(() => undefined) : undefined;
    await Promise.all([first, second].map((server) => server && closeServer(server)));
    if (second !== undefined) return port;
  }
  throw new Error(`no two neighbouring free ports on 127.0.0.1 in ${attempts} tries`);
}

/**
 * `start(port)` on a free pair of ports (freePortPair), and again on another pair when a port was
 * taken between the check and the bind: the machine's other tests bind port 0 all the time, and
 * once got one of them first. `start` rejects with an error whose message says "is in use" then
 * (the service and the chain log "… is in use …"); any other error, or the last attempt's, stands.
 */
export async function onFreePortPair<T>(start: (port: number) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await freePortPair());
    } catch (error) {
      if (attempt >= attempts || !/is in use/.test(String(error))) throw error;
    }
  }
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
