/**
 * Builds the Go programs the test suite uses (the FerretDB test server, grpcurl, the Connect
 * conformance runner) before vitest starts, as `npm test` runs it. The tests build them on first
 * use too, but within a hook's timeout and beside another test file on two cores; here, on a
 * fresh machine with an empty Go module cache, the builds have the machine to themselves and no
 * timeout but Go's own. One at a time: each `go build` already uses every core.
 *
 *   node test/support/build-test-tools.ts
 */
import { ensureConnectConformance } from "./connectconformance.ts";
import { ensureFerretdbBinary } from "./ferretdb.ts";
import { ensureGrpcurl } from "./grpcurl.ts";

if (process.env.MONGODB_URI === undefined || process.env.MONGODB_URI === "") await ensureFerretdbBinary();
await ensureGrpcurl();
await ensureConnectConformance();
