import { pino } from "pino";
import type { LogLevel } from "./config.ts";
import { createLogDestination } from "./log-destination.ts";

export type Logger = pino.Logger;

/**
 * JSON lines for machines; readable lines when a person watches a terminal (and the dev-only
 * pino-pretty is installed). Known secret-bearing fields are censored wherever they appear, as a
 * second line of defence behind never logging them in the first place.
 */
export function createLogger(options: {
  level: LogLevel;
  /** Bytes held while stdout does not keep up (default 8 MB); ignored with `destination`. */
  bufferBytes?: number;
  /** Where lines go; defaults to stdout. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}): Logger {
  const base: pino.LoggerOptions = {
    level: options.level,
    base: { service: "token-agent-service" },
    timestamp: createIsoTime(),
    // Errors from drivers can quote a connection string; their text passes through the same
    // password scrubbing as configuration does before it is written.
    serializers: { err: scrubbedError },
    redact: {
      paths: [
        "password",
        "*.password",
        "uri",
        "*.uri",
        "authorization",
        "*.authorization",
        "*.headers.authorization",
      ],
      censor: "[redacted]",
    },
  };
  if (options.destination !== undefined) return pino(base, options.destination);
  if (process.stdout.isTTY && canResolve("pino-pretty")) {
    return pino({ ...base, transport: { target: "pino-pretty", options: { colorize: true } } });
  }
  // Lines are written asynchronously, in batches at most LOG_FLUSH_MS apart (a synchronous
  // write per line cost a fifth of the unary throughput, and an asynchronous one a hand-over to
  // the thread pool per call), and flushed synchronously on exit. The buffer is bounded: past
  // MAX_LOG_BUFFER_BYTES (a stdout nobody reads) lines are dropped rather than held until memory
  // runs out.
  const destination = createLogDestination({
    fd: 1,
    maxBufferBytes: options.bufferBytes ?? MAX_LOG_BUFFER_BYTES,
    flushIntervalMs: LOG_FLUSH_MS,
  });
  process.once("exit", () => destination.flushSync());
  return pino(base, destination);
}

const MAX_LOG_BUFFER_BYTES = 8 * 1024 * 1024;
/** How long a log line may wait for company: short enough that a person tailing logs sees it at once. */
const LOG_FLUSH_MS = 5;

/**
 * How many lines the logger's destination has dropped so far (its buffer full, or stdout gone),
 * for a metric: the log cannot report its own losses. Always 0 for destinations that drop nothing
 * of their own (a test's stream, pretty-printing in a terminal).
 */
export function droppedLogLines(logger: Logger): () => number {
  const stream = destinationOf(logger) as { dropped?: unknown } | undefined;
  return () => (typeof stream?.dropped === "number" ? stream.dropped : 0);
}

/** The stream a logger (or any of its children) writes its lines to, through pino's public symbol. */
export function destinationOf(logger: Logger): unknown {
  return (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym];
}

/**
 * pino's isoTime, formatted once per millisecond: under load a dozen lines share each
 * millisecond, and building and formatting a Date per line cost more than the rest of the line.
 */
function createIsoTime(): () => string {
  let ms = -1;
  let text = "";
  return () => {
    const now = Date.now();
    if (now !== ms) {
      ms = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

const URI_PASSWORD = /(mongodb(?:\+srv)?:\/\/[^:/@\s]*):[^@\s]*@/g;

function scrubbedError(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
  return JSON.parse(JSON.stringify(serialized).replace(URI_PASSWORD, "$1:****@"));
}

function canResolve(specifier: string): boolean {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}
