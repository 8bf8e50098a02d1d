/**
 * Heap of a running service before and after many HTTP/1.1 requests abandoned mid-body (the
 * hardening issue's leak). Start the service with a small heap, then run this against it:
 *   PORT=18081 LOG_LEVEL=warn node --max-old-space-size=96 src/main.ts &
 *   node scripts/bench/aborted-connections.ts 18081 20000
 * A leak shows as heap growth (about 8.6 KB per connection before the fix) or the process dying.
 */
import * as net from "node:net";

const port = Number(process.argv[2] ?? 8080);
const count = Number(process.argv[3] ?? 20_000);

async function heapMb(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("nodejs_heap_size_used_bytes "));
  return Number(line?.split(" ")[1]) / 1e6;
}

function abandonOne(): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(
        "POST /token.v1.TokenService/GetTokenPrices HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
      );
      setTimeout(() => socket.destroy(), 2);
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve());
  });
}

console.log(`heap before: ${(await heapMb()).toFixed(1)} MB`);
const started = performance.now();
for (let i = 0; i < count; i += 50) await Promise.all(Array.from({ length: 50 }, abandonOne));
console.log(`${count} connections abandoned mid-body in ${Math.round(performance.now() - started)} ms`);
await new Promise((resolve) => setTimeout(resolve, 3000));
console.log(`heap after: ${(await heapMb()).toFixed(1)} MB`);
