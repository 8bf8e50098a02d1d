/**
 * The fenced code blocks of a markdown file, and the commands of a shell block with the answers the
 * text shows for them, as test/docs.test.ts runs them.
 *
 * A block's info string is its language and flags: ```sh runs, ```sh no-test is shown only (the
 * docs test counts those), ```sh stream runs a command that never ends by itself (it is stopped
 * after a few seconds, as a reader stops it with Ctrl-C).
 *
 * In a shell block, a comment right after a command that starts with `# {` or `# [` is the answer
 * the command gives, as JSON (it may go on over the next comment lines): the docs test checks that
 * the real answer has its shape. Any other comment is prose.
 */
import { readFileSync } from "node:fs";

export interface CodeBlock {
  /** The file, relative to the project, and the line of the opening fence (1-based). */
  readonly file: string;
  readonly line: number;
  readonly lang: string;
  readonly flags: readonly string[];
  /** The block's text, its indentation (inside a list) removed. */
  readonly text: string;
}

export interface ShellCommand {
  /** The command as written, continuation lines included. */
  readonly text: string;
  /** The line of the block it starts on (1-based, in the file). */
  readonly line: number;
  /** The answer the text shows for it, when it shows one. */
  readonly answer?: unknown;
}

const FENCE = /^(\s*)```([^`]*)$/;

export function codeBlocksOf(path: string, file: string): CodeBlock[] {
  const lines = readFileSync(path, "utf8").split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? "");
    if (open === null) continue;
    const indent = open[1] ?? "";
    const [lang = "", ...flags] = (open[2] ?? "").trim().split(/\s+/);
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j] ?? ""); j++) {
      const text = lines[j] ?? "";
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text.trimStart());
    }
    if (j === lines.length) throw new Error(`${file}:${i + 1}: a code block that never closes`);
    blocks.push({ file, line: i + 1, lang, flags: flags.filter((f) => f !== ""), text: body.join("\n") });
    i = j;
  }
  return blocks;
}

/** The commands of a shell block, each with the answer shown right after it, if any. */
export function commandsOf(block: CodeBlock): ShellCommand[] {
  const lines = block.text.split("\n");
  const commands: ShellCommand[] = [];
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i] ?? "";
    if (first.trim() === "" || first.trimStart().startsWith("#")) continue;
    const start = i;
    let text = first;
    while (text.endsWith("\\") && i + 1 < lines.length) text += `\n${lines[++i]}`;
    let answer: unknown;
    const next = lines[i + 1]?.trimStart() ?? "";
    if (next.startsWith("# {") || next.startsWith("# [")) {
      let json = "";
      for (let k = i + 1; k < lines.length && (lines[k] ?? "").trimStart().startsWith("#"); k++) {
        json += (lines[k] ?? "").trimStart().replace(/^#\s?/, "");
        try {
          answer = JSON.parse(json);
          i = k;
          break;
        } catch {}
      }
      if (answer === undefined) {
        throw new Error(`${block.file}:${block.line + i + 2}: the answer shown is not JSON: ${json}`);
      }
    }
    commands.push({ text, line: block.line + start + 1, ...(answer === undefined ? {} : { answer }) });
  }
  return commands;
}

/** String members compared by value: they say what happened, where the rest varies per run. */
const EXACT = new Set(["code", "status", "outcome", "type", "symbol", "token"]);

/**
 * Where `actual` does not have the shape of `expected`: every member shown must be there with the
 * same type (arrays: at least as many elements, each of that shape), booleans and the members named
 * in EXACT with the same value. Members the text leaves out are not checked.
 */
export function shapeMismatches(expected: unknown, actual: unknown, path = "$", key = ""): string[] {
  if (expected === null) return actual === null ? [] : [`${path} is ${JSON.stringify(actual)}, not null`];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return [`${path} is not an array`];
    if (actual.length < expected.length)
      return [`${path} has ${actual.length} elements, the text shows ${expected.length}`];
    return expected.flatMap((e, i) => shapeMismatches(e, actual[i], `${path}[${i}]`));
  }
  if (typeof expected === "object") {
    if (typeof actual !== "object" || actual === null || Array.isArray(actual))
      return [`${path} is not an object`];
    return Object.entries(expected).flatMap(([k, v]) =>
      k in actual
        ? shapeMismatches(v, (actual as Record<string, unknown>)[k], `${path}.${k}`, k)
        : [`${path}.${k} is missing`],
    );
  }
  if (typeof actual !== typeof expected)
    return [`${path} is ${JSON.stringify(actual)}, not a ${typeof expected}`];
  if (typeof expected === "boolean" || (typeof expected === "string" && EXACT.has(key))) {
    return actual === expected
      ? []
      : [`${path} is ${JSON.stringify(actual)}, not ${JSON.stringify(expected)}`];
  }
  return [];
}
