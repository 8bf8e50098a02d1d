/**
 * An open-loop load generator for HTTP/1.1 latency: requests leave on a fixed schedule (`rate`
 * per second, evenly spaced, spread over keep-alive connections), whether or not earlier ones have
 * been answered, and each latency is measured from the moment its request was due. So a stall in
 * the server shows in the percentiles instead of slowing the load down (what wrk2 calls
 * coordinated omission). Prints one JSON line: the rate achieved and p50, p90, p99 and max in ms.
 *
 *   node scripts/bench/fixed-rate.ts HOST PORT PATH CONTENT_TYPE BODY_FILE RATE SECONDS [CONNECTIONS]
 */
import { readFileSync } from "node:fs";
import * as net from "node:net";

const [host, port, path, contentType, bodyFile, rateText, secondsText, connectionsText] =
  process.argv.slice(2);
const body = readFileSync(bodyFile as string);
const rate = Number(rateText);
const seconds = Number(secondsText);
const request = Buffer.concat([
  Buffer.from(
    `POST ${path} HTTP/1.1\r\nhost: ${host}:${port}\r\ncontent-type: ${contentType}\r\n` +
      `content-length: ${body.length}\r\n\r\n`,
    "latin1",
  ),
  body,
]);

interface Connection {
  socket: net.Socket;
  /** When each request in flight on this connection was due, oldest first. */
  due: number[];
  buffer: Buffer;
}

const latencies: number[] = [];
const connections: Connection[] = await Promise.all(
  Array.from({ length: Number(connectionsText ?? 32) }, () => open()),
);

function open(): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), host as string, () => resolve(connection));
    socket.setNoDelay(true);
    const connection: Connection = { socket, due: [], buffer: Buffer.alloc(0) };
    socket.on("data", (chunk: Buffer) => {
      connection.buffer = connection.buffer.length === 0 ? chunk : Buffer.concat([connection.buffer, chunk]);
      // Answers come back in order: take every complete one.
      for (;;) {
        const end = connection.buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = connection.buffer.subarray(0, end).toString("latin1");
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (connection.buffer.length < end + 4 + length) return;
        connection.buffer = connection.buffer.subarray(end + 4 + length);
        const due = connection.due.shift() as number;
        latencies.push(performance.now() - due);
      }
    });
    socket.on("error", reject);
  });
}

const start = performance.now() + 50;
const total = Math.round(rate * seconds);
const interval = 1000 / rate;
let sent = 0;
await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now();
    while (sent < total && start + sent * interval <= now) {
      // The connection with the fewest requests in flight takes the next one.
      let target = connections[0] as Connection;
      for (const c of connections) if (c.due.length < target.due.length) target = c;
      target.due.push(start + sent * interval);
      target.socket.write(request);
      sent++;
    }
    if (sent < total) setImmediate(tick);
    else resolve();
  };
  tick();
});
const deadline = performance.now() + 10_000;
while (latencies.length < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
for (const c of connections) c.socket.destroy();
const sorted = latencies.sort((a, b) => a - b);
const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;
console.log(
  JSON.stringify({
    rate: sorted.length / seconds,
    answered: sorted.length,
    sent,
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: sorted.at(-1),
  }),
);
