/**
 * Headless Chromium for the browser tests: Debian's `chromium` package, installed with apt the
 * first time it is missing (CI machines start bare; the tests run as root there), so the suite
 * needs no browser download from npm and no CDN.
 */
import { spawn } from "node:child_process";
import { access } from "node:fs/promises";

export const CHROMIUM = "/usr/bin/chromium";

/** Flags for a quiet, self-contained headless run: no sandbox (root in containers), no phoning home. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let installing: Promise<string> | undefined;

/** The path of Chromium, installed with `apt-get install chromium` when it is not there yet. */
export function ensureChromium(): Promise<string> {
  installing ??= access(CHROMIUM)
    .then(() => CHROMIUM)
    .catch(async () => {
      process.stderr.write(`installing Debian's chromium into ${CHROMIUM} for the browser tests\n`);
      // Another process may hold dpkg's lock (a parallel test worker, unattended upgrades): wait for it.
      const lock = ["-o", "DPkg::Lock::Timeout=600"];
      await run("apt-get", [...lock, "update"]);
      await run("apt-get", [...lock, "install", "-y", "--no-install-recommends", "chromium"]);
      await access(CHROMIUM);
      return CHROMIUM;
    });
  return installing;
}

function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      stdio: ["ignore", 2, 2],
    });
    child.on("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "ENOENT"
          ? new Error(`${command} is not available: install Chromium at ${CHROMIUM} by hand`, {
              cause: error,
            })
          : error,
      ),
    );
    child.on("exit", (code, signal) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(" ")} failed (${signal ?? `exit code ${code}`})`)),
    );
  });
}
