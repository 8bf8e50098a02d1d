import { readFileSync } from "node:fs";

/**
 * The fields of a /proc/<pid>/stat (or /proc/<pid>/task/<tid>/stat) line after the command name:
 * [0] the state, [1] the parent's pid, ..., [11] user and [12] system time in clock ticks. The
 * name is in parentheses and may itself hold spaces and parentheses, so the fields start after the
 * last ")". Linux only, as the tests and benches run.
 */
export function procStatFields(text: string): string[] {
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** The stat fields of `path` (a /proc stat file), or undefined once the process is gone. */
export function readProcStat(path: string): string[] | undefined {
  try {
    return procStatFields(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
