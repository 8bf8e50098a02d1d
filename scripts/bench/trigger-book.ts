/**
 * The trigger book's cost per price observation, against the same rules walked over every leg
 * (test/support/naive-trigger-book.ts), in this process and in the same run: 10,000 open legs on
 * 20 tokens (OCO pairs and single legs, above and below), then a random walk of each token's
 * price observed in turn, every token every 2 s, with some observations the same cached price
 * again. Prints the CPU time (process.cpuUsage, user + system) per observation of each, their
 * ratio, the legs the book looked at per observation, and how many legs fired (the two must
 * agree). Asserts nothing.
 *
 *   node scripts/bench/trigger-book.ts
 *   BENCH_ONLY=trigger-book npm run bench    (the same, from the main bench)
 *
 * BENCH_TRIGGER_LEGS (10000), BENCH_TRIGGER_TOKENS (20), BENCH_TRIGGER_OBSERVATIONS (30000 a round),
 * BENCH_TRIGGER_ROUNDS (3; the median is printed) and BENCH_TRIGGER_BOOK_REPEATS (10: the book runs
 * each round's series that many times, the walk once) change the load.
 */
import {
  createTriggerBook,
  type PriceObservation,
  type TriggerBook,
  type TriggerBookOptions,
  type TriggerLeg,
} from "../../src/kinds/trigger/trigger-book.ts";
import { createNaiveTriggerBook } from "../../test/support/naive-trigger-book.ts";
import { prng } from "../../test/support/prng.ts";

const numberOf = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/**
 * Two confirmations 2 s apart: every token is observed every 2 s, so a leg fires on its second
 * holding observation (or its third, after a repeated cached price).
 */
const BOOK_OPTIONS: TriggerBookOptions = { confirmations: 2, holdMs: 2_000 };

interface Workload {
  readonly legs: readonly TriggerLeg[];
  readonly observations: readonly { readonly token: string; readonly observation: PriceObservation }[];
}

/**
 * `legCount` legs around each token's first price (60 % of agents an OCO pair 1-25 % either side,
 * the others one leg above or below), and `count` observations of a random walk (0.2 % a step),
 * one token after another; one in ten repeats the token's last observation (a cached price).
 */
function workload(seed: number, legCount: number, tokenCount: number, count: number): Workload {
  const random = prng(seed);
  const tokens = Array.from({ length: tokenCount }, (_, i) => `mint-${i}`);
  const prices = tokens.map(() => 10 ** (random.next() * 4 - 1));
  const away = () => 0.01 + 0.24 * random.next();
  const legs: TriggerLeg[] = [];
  for (let agent = 0; legs.length < legCount; agent++) {
    const t = random.int(tokenCount);
    const token = tokens[t] as string;
    const price = prices[t] as number;
    const agentId = `agent-${agent}`;
    if (random.next() < 0.6 && legs.length + 2 <= legCount) {
      legs.push({ agentId, leg: "take_profit", token, condition: "above", priceUsd: price * (1 + away()) });
      legs.push({ agentId, leg: "stop_loss", token, condition: "below", priceUsd: price * (1 - away()) });
    } else {
      const condition = random.next() < 0.5 ? "above" : "below";
      const priceUsd = price * (condition === "above" ? 1 + away() : 1 - away());
      legs.push({ agentId, leg: "single", token, condition, priceUsd });
    }
  }
  const last: (PriceObservation | undefined)[] = tokens.map(() => undefined);
  const observations: Workload["observations"][number][] = [];
  for (let step = 0; step < count; step++) {
    const t = step % tokenCount;
    const previous = last[t];
    let observation: PriceObservation;
    if (previous !== undefined && random.next() < 0.1) {
      observation = previous;
    } else {
      // A normal step by Box-Muller: 0.2 % standard deviation.
      const gaussian = Math.sqrt(-2 * Math.log(1 - random.next())) * Math.cos(2 * Math.PI * random.next());
      prices[t] = (prices[t] as number) * Math.exp(0.002 * gaussian);
      observation = { priceUsd: prices[t] as number, atMs: Math.floor(step / tokenCount) * 2_000 };
    }
    last[t] = observation;
    observations.push({ token: tokens[t] as string, observation });
  }
  return { legs, observations };
}

interface Run {
  /** CPU microseconds per observation, user and system. */
  readonly cpuUs: number;
  /** CPU microseconds per leg added, before the observations. */
  readonly addUs: number;
  readonly fired: number;
  readonly left: number;
}

const cpuSince = (before: NodeJS.CpuUsage) => {
  const spent = process.cpuUsage(before);
  return spent.user + spent.system;
};

/**
 * Adds the workload's legs to a new book, then feeds it the observations, each part timed on its
 * own; `times` times over (a new book each time), the CPU time summed: the book's run of one
 * series lasts some tens of milliseconds, which one collection or one neighbour on the VM would
 * decide.
 */
function run(newBook: () => TriggerBook, load: Workload, times = 1): Run {
  let addCpu = 0;
  let observeCpu = 0;
  let fired = 0;
  let left = 0;
  for (let i = 0; i < times; i++) {
    const book = newBook();
    const adding = process.cpuUsage();
    for (const leg of load.legs) book.add(leg);
    addCpu += cpuSince(adding);
    fired = 0;
    const observing = process.cpuUsage();
    for (const { token, observation } of load.observations) fired += book.observe(token, observation).length;
    observeCpu += cpuSince(observing);
    left = book.size();
  }
  return {
    cpuUs: observeCpu / (times * load.observations.length),
    addUs: addCpu / (times * load.legs.length),
    fired,
    left,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

export function triggerBookFigures(): void {
  const legCount = numberOf("BENCH_TRIGGER_LEGS", 10_000);
  const tokenCount = numberOf("BENCH_TRIGGER_TOKENS", 20);
  const count = numberOf("BENCH_TRIGGER_OBSERVATIONS", 30_000);
  const rounds = numberOf("BENCH_TRIGGER_ROUNDS", 3);
  const repeats = numberOf("BENCH_TRIGGER_BOOK_REPEATS", 10);
  const newBook = () => createTriggerBook(BOOK_OPTIONS);
  const newWalk = () => createNaiveTriggerBook(BOOK_OPTIONS);
  // Warm-up, not counted: both compiled by the JIT before anything is measured.
  const warm = workload(1, legCount, tokenCount, Math.min(count, 10_000));
  run(newBook, warm, repeats);
  run(newWalk, warm);

  const book: Run[] = [];
  const naive: Run[] = [];
  for (let round = 0; round < rounds; round++) {
    // One series a round, the same for both, taken in turn so that what the VM does falls on both.
    const load = workload(100 + round, legCount, tokenCount, count);
    book.push(run(newBook, load, repeats));
    naive.push(run(newWalk, load));
    const [b, n] = [book.at(-1) as Run, naive.at(-1) as Run];
    if (b.fired !== n.fired || b.left !== n.left) {
      console.warn(
        `round ${round}: the book fired ${b.fired} (${b.left} left), ` +
          `the walk over every leg ${n.fired} (${n.left} left)`,
      );
    }
  }
  // The legs the book looks at per observation, and the legs open, in a run of its own (not timed).
  let examined = 0;
  let open = 0;
  const counted: TriggerBook = createTriggerBook({
    ...BOOK_OPTIONS,
    onExamined: (legs) => {
      examined += legs;
      open += counted.size();
    },
  });
  run(() => counted, workload(100, legCount, tokenCount, count));

  const bookUs = median(book.map((r) => r.cpuUs));
  const naiveUs = median(naive.map((r) => r.cpuUs));
  const show = (runs: Run[]) => runs.map((r) => r.cpuUs.toFixed(2)).join(", ");
  console.log(
    `trigger book: ${legCount} legs on ${tokenCount} tokens, ${count} observations a round, ` +
      `${BOOK_OPTIONS.confirmations} confirmations ${BOOK_OPTIONS.holdMs} ms apart, ` +
      `median of ${rounds} rounds (the book's each ${repeats} runs of the round's series)`,
  );
  console.log(`  book:                  ${bookUs.toFixed(2)} us CPU per observation (rounds: ${show(book)})`);
  console.log(
    `  walk over every leg:   ${naiveUs.toFixed(2)} us CPU per observation (rounds: ${show(naive)})`,
  );
  console.log(`  ratio walk / book:     ${(naiveUs / bookUs).toFixed(1)}x`);
  console.log(
    `  adding the legs: ${median(book.map((r) => r.addUs)).toFixed(2)} us CPU per leg (book), ` +
      `${median(naive.map((r) => r.addUs)).toFixed(2)} us (walk)`,
  );
  console.log(
    `  legs the book looked at per observation (binary search steps included): ` +
      `${(examined / count).toFixed(1)}, with ${(open / count).toFixed(0)} legs open on average`,
  );
  console.log(
    `  fired per round: ${book.map((r) => r.fired).join(", ")} (book), ` +
      `${naive.map((r) => r.fired).join(", ")} (walk); ` +
      `legs left: ${book.map((r) => r.left).join(", ")}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  triggerBookFigures();
}
