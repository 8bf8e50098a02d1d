import { pino } from "pino";
import type { LogLevel } from "./config.ts";

export type Logger = pino.Logger;

/**
 * JSON lines for machines; readable lines when a person watches a terminal (and the dev-only
 * pino-pretty is installed). Known secret-bearing fields are censored wherever they appear, as a
 * second line of defence behind never logging them in the first place.
 */
export function createLogger(options: {
  level: LogLevel;
  /** Where lines go; defaults to stdout. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}): Logger {
  const base: pino.LoggerOptions = {
    level: options.level,
    base: { service: "token-agent-service" },
    timestamp: pino.stdTimeFunctions.isoTime,
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
  return pino(base);
}

function canResolve(specifier: string): boolean {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}
