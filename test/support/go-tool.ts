/**
 * Builds a Go program the tests need into the project's git-ignored `.tools/bin`, once. Go is the
 * one toolchain the test run requires besides Node (see docs/testing.md); what it builds here (the
 * FerretDB test server, grpcurl) comes from the Go module proxy, pinned to a version.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const TOOLS_BIN = fileURLToPath(new URL("../../.tools/bin/", import.meta.url));

/**
 * Runs `go` so that it writes the binary into a scratch folder under the name of `binary`, then
 * renames it into place, so that concurrent builders (test workers) never see half a file.
 * `command` receives the scratch folder: `(dir) => ({ args: ["build", "-o", join(dir, name), "."] })`
 * or `(dir) => ({ args: ["install", "module@version"], env: { GOBIN: dir } })`.
 */
export async function buildGoTool(options: {
  binary: string;
  what: string;
  command: (dir: string) => { args: string[]; env?: Record<string, string> };
  cwd?: string;
}): Promise<string> {
  const { binary, what } = options;
  await mkdir(dirname(binary), { recursive: true });
  const scratch = await mkdtemp(`${binary}.partial-`);
  const out = join(scratch, basename(binary));
  const { args, env } = options.command(scratch);
  process.stderr.write(`building ${what} into ${binary} (the first build takes a while)\n`);
  try {
    await new Promise<void>((resolve, reject) => {
      const go = spawn("go", args, {
        cwd: options.cwd ?? dirname(binary),
        env: { ...process.env, ...env },
        stdio: ["ignore", 2, 2],
      });
      go.on("error", (err: NodeJS.ErrnoException) => {
        reject(
          err.code === "ENOENT"
            ? new Error(
                `\`go\` is not on PATH: it is needed to build ${what}. Install Go (https://go.dev/dl/), ` +
                  "or for the database alone set MONGODB_URI to a running MongoDB.",
                { cause: err },
              )
            : err,
        );
      });
      go.on("exit", (code, signal) => {
        if (code === 0) resolve();
        else
          reject(
            new Error(`go build of ${what} failed (${signal ?? `exit code ${code}`}); see its output above`),
          );
      });
    });
    await rename(out, binary);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return binary;
}
