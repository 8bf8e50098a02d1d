/**
 * Times two functions of the same inputs in alternation, in one process: a warm-up of each, then
 * rounds A, B, A, B, … so that whatever else the shared machine does falls on both alike, each
 * round timed by the CPU time it took (see timed). Before
 * any timing the two must give the same output for every input (bytes, text, or deep equality),
 * or the bench fails loudly: a figure for two functions that differ compares nothing.
 */
import { isDeepStrictEqual } from "node:util";

export interface Case<I, O> {
  readonly name: string;
  /** The service's code path this function sits on, in words (printed with the figure). */
  readonly path: string;
  readonly inputs: readonly I[];
  ours(input: I): O | Promise<O>;
  library(input: I): O | Promise<O>;
  /** How the two outputs of one input are made comparable (to bytes, text or a plain value). */
  comparable?(output: O): unknown;
}

export interface Figure {
  readonly name: string;
  readonly path: string;
  /** Microseconds per call, each round's, for ours and the library's. */
  readonly oursUs: readonly number[];
  readonly libraryUs: readonly number[];
  /** Median of each, and library ÷ ours per pair of rounds. */
  readonly oursMedianUs: number;
  readonly libraryMedianUs: number;
  readonly ratio: number;
  readonly ratios: readonly number[];
}

export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
/** About how much CPU one round of the slower function takes, in ms. */
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 150);

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Output of both sides for every input: equal, or a thrown error naming the first difference. */
async function checkSame<I, O>(c: Case<I, O>): Promise<void> {
  const view = c.comparable ?? ((o: O) => o);
  for (const [i, input] of c.inputs.entries()) {
    const a = view(await c.ours(input));
    const b = view(await c.library(input));
    if (!isDeepStrictEqual(a, b)) {
      throw new Error(
        `${c.name}: ours and the library's differ for input ${i}:\n  ours:    ${show(a)}\n  library: ${show(b)}`,
      );
    }
  }
}

function show(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("hex").slice(0, 400);
  return String(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))).slice(0, 400);
}

let sink = 0;
function consume(value: unknown): void {
  if (typeof value === "string") sink += value.length;
  else if (value instanceof Uint8Array) sink += value.length;
  else if (value !== null && value !== undefined) sink += 1;
}

/**
 * Microseconds of CPU per call over `calls` calls, cycling through the inputs: the process's CPU
 * time (user and system, every thread: the garbage collector's helpers count), not the clock's.
 * On 2 shared cores at a load of 10 this process gets a fifth of a core, and a round timed by the
 * clock measured the other work's turns as much as its own.
 */
async function timed<I, O>(
  fn: (input: I) => O | Promise<O>,
  inputs: readonly I[],
  calls: number,
): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const out = fn(inputs[i % inputs.length] as I);
    consume(out instanceof Promise ? await out : out);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / calls;
}

export async function alternate<I, O>(c: Case<I, O>): Promise<Figure> {
  await checkSame(c);
  // Calibrate: calls per round such that the slower side's round takes about ROUND_MS.
  let probe = Math.max(c.inputs.length, 50);
  let slowestUs = 0;
  for (;;) {
    slowestUs = Math.max(await timed(c.ours, c.inputs, probe), await timed(c.library, c.inputs, probe));
    if (slowestUs * probe > 20_000 || probe > 5_000_000) break;
    probe *= 4;
  }
  const calls = Math.max(c.inputs.length, Math.round((ROUND_MS * 1000) / slowestUs));
  // Warm-up: two rounds each, not counted.
  for (let i = 0; i < 2; i++) {
    await timed(c.ours, c.inputs, calls);
    await timed(c.library, c.inputs, calls);
  }
  const oursUs: number[] = [];
  const libraryUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // ABAB…, starting with the other side every other round.
    if (round % 2 === 0) {
      oursUs.push(await timed(c.ours, c.inputs, calls));
      libraryUs.push(await timed(c.library, c.inputs, calls));
    } else {
      libraryUs.push(await timed(c.library, c.inputs, calls));
      oursUs.push(await timed(c.ours, c.inputs, calls));
    }
  }
  const ratios = oursUs.map((o, i) => (libraryUs[i] as number) / o);
  return {
    name: c.name,
    path: c.path,
    oursUs,
    libraryUs,
    oursMedianUs: median(oursUs),
    libraryMedianUs: median(libraryUs),
    ratio: median(libraryUs) / median(oursUs),
    ratios,
  };
}

const fmt = (us: number) => (us < 10 ? us.toFixed(3) : us < 100 ? us.toFixed(2) : us.toFixed(1));

/** One line a figure: medians, the spread over rounds, and the ratio library ÷ ours. */
export function report(f: Figure): string {
  const spread = (values: readonly number[]) => `${fmt(Math.min(...values))}–${fmt(Math.max(...values))}`;
  const r = f.ratios.map((x) => x.toFixed(2));
  return (
    `${f.name}\n  ours    ${fmt(f.oursMedianUs)} µs of CPU a call (rounds ${spread(f.oursUs)})\n` +
    `  library ${fmt(f.libraryMedianUs)} µs of CPU a call (rounds ${spread(f.libraryUs)})\n` +
    `  library ÷ ours ${f.ratio.toFixed(2)}× (per pair ${Math.min(...f.ratios).toFixed(2)}–${Math.max(...f.ratios).toFixed(2)}: ${r.join(", ")})\n` +
    `  path: ${f.path}` +
    (sink < 0 ? "" : "")
  );
}
