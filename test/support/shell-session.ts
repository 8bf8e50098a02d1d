/**
 * A reader's terminal for the docs test: one bash process that takes commands one at a time, as
 * a person pastes them, so variables (`AGENT=$(…)`, `export ADMIN_API_KEY=…`) and background jobs
 * carry from one block to the next. Each command's exit status and output come back separately.
 */
import { type ChildProcess, spawn } from "node:child_process";

export interface CommandResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface ShellSession {
  /** Runs `command` (a line, or lines joined by `\`), and resolves once it has ended. */
  run(command: string, timeoutMs: number): Promise<CommandResult>;
  /** Ends the shell and everything it started. */
  close(): void;
}

const MARK = "\u001eDOCS-STEP";

/** `prelude` runs first (functions, `set -o pipefail`); `env` is the whole environment. */
export function openShellSession(options: {
  cwd: string;
  env: Record<string, string>;
  prelude: string;
}): ShellSession {
  const shell: ChildProcess = spawn("bash", ["--noprofile", "--norc"], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["pipe", "pipe", "pipe"],
    // A group of its own, so that closing ends background jobs too.
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  let wake: (() => void) | undefined;
  shell.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
    wake?.();
  });
  shell.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  shell.once("exit", () => wake?.());
  shell.stdin?.write(`${options.prelude}\n`);
  let step = 0;

  return {
    async run(command, timeoutMs) {
      step += 1;
      const mark = `${MARK} ${step} `;
      stdout = "";
      stderr = "";
      shell.stdin?.write(`${command}\n__docs_status=$?; printf '\\n${mark}%d\\n' "$__docs_status"\n`);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const at = stdout.indexOf(mark);
        if (at >= 0) {
          const end = stdout.indexOf("\n", at);
          if (end >= 0) {
            const status = Number(stdout.slice(at + mark.length, end));
            // The output, without the newline the mark put before itself.
            return { status, stdout: stdout.slice(0, at).replace(/\n$/, ""), stderr };
          }
        }
        if (shell.exitCode !== null || shell.signalCode !== null) {
          return { status: -1, stdout, stderr: `${stderr}\n(the shell exited)` };
        }
        const left = deadline - Date.now();
        if (left <= 0) return { status: -2, stdout, stderr: `${stderr}\n(no end within ${timeoutMs} ms)` };
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 1_000));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    },
    close() {
      try {
        if (shell.pid !== undefined) process.kill(-shell.pid, "SIGKILL");
      } catch {}
    },
  };
}
