/**
 * The call line written without pino's general path must be the line pino writes: the same bytes
 * for every level and every kind of value, with the logger the service makes. A logger configured
 * beyond what the writer reproduces must get pino's own output.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createLogger, type Logger } from "../src/logger.ts";
import { type CallLineLevel, createCallLineWriter } from "../src/rpc/call-line.ts";

/** A destination that keeps what it is given, line by line. */
function capture() {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
}

/** The call-line child, made as the logging interceptor makes it. */
const lineLogger = (logger: Logger) =>
  logger
    .child({}, { redact: [] })
    .child({ procedure: "/token.v1.TokenService/GetTokenPrices", protocol: "grpc" });

/** The line without its time, which may differ between two writes a millisecond apart. */
const timeless = (line: string) => line.replace(/,"time":"[^"]*"/, ',"time":"T"');

const cases: [CallLineLevel, string, number, string, string | undefined][] = [
  ["info", "ok", 1.234, "3f0c2a54-8d0e-4c55-9b1e-7a4c43e5f0aa", undefined],
  ["info", "not_found", 0, "caller.id_with-dots", "key_01HZX"],
  ["warn", "unavailable", 12345.678, "a", "k"],
  ["error", "internal", 0.001, "req", undefined],
  // Values that need escaping (the writer takes any string, though the service sends none).
  ["info", "ok", 2, 'quote " and \\ backslash', 'key "x"'],
  ["info", "ok", 3, "tab\tnewline\n", "é ü 漢字"],
  ["info", "ok", Number.NaN, "nan", undefined],
];

describe("call line", () => {
  it("writes the bytes pino writes for the same call, at every level", () => {
    const out = capture();
    const logger = lineLogger(createLogger({ level: "info", destination: out.stream }));
    const write = createCallLineWriter(logger);
    for (const [level, code, durationMs, requestId, keyId] of cases) {
      write(level, code, durationMs, requestId, keyId);
      logger[level]({ code, duration_ms: durationMs, request_id: requestId, key_id: keyId }, "rpc");
    }
    expect(out.lines).toHaveLength(cases.length * 2);
    for (let i = 0; i < out.lines.length; i += 2) {
      expect(timeless(out.lines[i] as string)).toBe(timeless(out.lines[i + 1] as string));
      expect(() => JSON.parse(out.lines[i] as string)).not.toThrow();
    }
  });

  it("follows the logger's level labels and time format", () => {
    const out = capture();
    const logger = pino(
      { formatters: { level: (label) => ({ severity: label.toUpperCase() }) } },
      out.stream,
    ).child({ procedure: "/p", protocol: "connect" });
    createCallLineWriter(logger)("error", "internal", 5, "r", "k");
    logger.error({ code: "internal", duration_ms: 5, request_id: "r", key_id: "k" }, "rpc");
    expect(out.lines[0]).toMatch(/^\{"severity":"ERROR","time":\d+,/);
    expect(timeless((out.lines[0] as string).replace(/"time":\d+/, ""))).toBe(
      timeless((out.lines[1] as string).replace(/"time":\d+/, "")),
    );
  });

  it("leaves lines to pino when the logger is configured beyond what it reproduces", () => {
    const out = capture();
    const logger = pino(
      {
        base: { service: "s" },
        mixin: () => ({ extra: 1 }),
        formatters: { level: (label) => ({ level: label }) },
      },
      out.stream,
    ).child({ procedure: "/p", protocol: "connect" });
    createCallLineWriter(logger)("warn", "ok", 1, "r", undefined);
    const line = JSON.parse(out.lines[0] as string);
    expect(line).toMatchObject({ level: "warn", extra: 1, code: "ok", request_id: "r", msg: "rpc" });
  });
});
