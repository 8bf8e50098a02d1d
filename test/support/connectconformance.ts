import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { buildGoTool, TOOLS_BIN } from "./go-tool.ts";

const run = promisify(execFile);

/** The Connect conformance suite's runner; pinned, so the cases do not drift with its releases. */
const MODULE = "connectrpc.com/conformance";
const VERSION = "v1.0.5";
const BINARY = join(TOOLS_BIN, "connectconformance");

let building: Promise<string> | undefined;

/**
 * The path of connectconformance, installed with `go install` into `.tools/bin` the first time, or
 * again when the binary there reports another version than the pinned one.
 */
export function ensureConnectConformance(): Promise<string> {
  const module = `${MODULE}/cmd/connectconformance@${VERSION}`;
  building ??= run(BINARY, ["--version"])
    .then(({ stdout }) => stdout.trim() === `connectconformance ${VERSION}`)
    .catch(() => false)
    .then((current) =>
      current
        ? BINARY
        : buildGoTool({
            binary: BINARY,
            what: `connectconformance (${module})`,
            command: (dir) => ({ args: ["install", module], env: { GOBIN: dir } }),
          }),
    );
  return building;
}

/** Where Go keeps the pinned module's source (its protos among it) once it has been fetched. */
export async function conformanceModuleDir(): Promise<string> {
  const { stdout } = await run("go", ["env", "GOMODCACHE"]);
  return join(stdout.trim(), `${MODULE}@${VERSION}`);
}
