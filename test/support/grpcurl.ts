import { access } from "node:fs/promises";
import { join } from "node:path";
import { buildGoTool, TOOLS_BIN } from "./go-tool.ts";

/** grpcurl, an independent reflection client; pinned, so the tests do not drift with its releases. */
const GRPCURL_MODULE = "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4";
const BINARY = join(TOOLS_BIN, "grpcurl");

let building: Promise<string> | undefined;

/** The path of grpcurl, installed with `go install` into `.tools/bin` the first time. */
export function ensureGrpcurl(): Promise<string> {
  building ??= access(BINARY)
    .then(() => BINARY)
    .catch(() =>
      buildGoTool({
        binary: BINARY,
        what: `grpcurl (${GRPCURL_MODULE})`,
        command: (dir) => ({ args: ["install", GRPCURL_MODULE], env: { GOBIN: dir } }),
      }),
    );
  return building;
}
