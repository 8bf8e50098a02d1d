/**
 * The conformance server that `connectconformance --mode server` launches (see
 * test/conformance.test.ts): the service's own server, as `main.ts` builds it (the same listener
 * for HTTP/1.1 and h2c, the same adapter, interceptors and fallback), serving the suite's
 * ConformanceService beside the service's own. Protocol (docs/testing_servers.md of the suite): a
 * size-prefixed ServerCompatRequest on stdin, a size-prefixed ServerCompatResponse with host and
 * port on stdout, then serve until SIGTERM.
 *
 * stdout carries the handshake alone, so logs go to stderr, at LOG_LEVEL (default silent: the
 * suite provokes thousands of errors on purpose).
 */
import { once } from "node:events";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { HTTPVersion } from "../../gen/connectrpc/conformance/v1/config_pb.ts";
import {
  ServerCompatRequestSchema,
  ServerCompatResponseSchema,
} from "../../gen/connectrpc/conformance/v1/server_compat_pb.ts";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/logger.ts";
import { createService } from "../../src/service.ts";
import { createConformanceService } from "./conformance-service.ts";

const request = fromBinary(ServerCompatRequestSchema, await readSizePrefixed(process.stdin));
if (request.useTls) throw new Error("TLS is not supported: the service serves cleartext (h2c) only");
if (request.httpVersion === HTTPVersion.HTTP_VERSION_3) throw new Error("HTTP/3 is not supported");

const config = loadConfig({
  HOST: "127.0.0.1",
  PORT: "0",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "silent",
  // The embedded chain answers in-process only: the suite's server needs no JSON-RPC port.
  LOCAL_SOLANA_RPC_PORT: "0",
  // The suite's per-message limit, when it tests one; else the service's default.
  ...(request.messageReceiveLimit > 0 ? { MAX_REQUEST_BYTES: String(request.messageReceiveLimit) } : {}),
});
const logger = createLogger({ level: config.logLevel, destination: process.stderr });
const conformance = createConformanceService();
const service = await createService(
  config,
  logger,
  {},
  {
    extraServices: {
      routes: (router) => router.service(conformance.service, conformance.implementation),
      registry: conformance.registry,
    },
  },
);
const address = await service.listen();
writeSizePrefixed(
  process.stdout,
  toBinary(
    ServerCompatResponseSchema,
    create(ServerCompatResponseSchema, { host: address.address, port: address.port }),
  ),
);

await once(process, "SIGTERM");
await service.close();
process.exit(0);

/** Reads one message framed by a 32-bit big-endian length, as the suite writes it. */
async function readSizePrefixed(stream: NodeJS.ReadableStream): Promise<Uint8Array> {
  let buffered = Buffer.alloc(0);
  for await (const chunk of stream) {
    buffered = Buffer.concat([buffered, chunk as Buffer]);
    if (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
      return buffered.subarray(4, 4 + buffered.readUInt32BE(0));
    }
  }
  throw new Error("stdin ended before a whole ServerCompatRequest arrived");
}

function writeSizePrefixed(stream: NodeJS.WritableStream, message: Uint8Array): void {
  const size = Buffer.alloc(4);
  size.writeUInt32BE(message.byteLength);
  stream.write(Buffer.concat([size, message]));
}
