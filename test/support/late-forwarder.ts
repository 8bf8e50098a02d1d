import * as http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP listener whose URL is known before the server it forwards to exists: the service reads
 * JUPITER_SWAP_URL at start, and the Jupiter-shaped test server can only start once the service's
 * embedded chain is up. Requests and answers are piped as they come, so slow, huge and unanswered
 * answers reach the caller as the test server sends them. Answers 503 until `forwardTo`.
 */
export async function startLateForwarder(): Promise<{
  url: string;
  forwardTo(target: string): void;
  close(): Promise<void>;
}> {
  let target: string | undefined;
  const server = http.createServer((req, res) => {
    if (target === undefined) {
      res.writeHead(503).end();
      return;
    }
    const upstream = http.request(
      `${target}${req.url ?? "/"}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwardTo(url) {
      target = url.replace(/\/+$/, "");
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
