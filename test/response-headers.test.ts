/**
 * The lean path's response headers against the platform's `Headers` (undici): random sequences of
 * set, append and delete, with names in mixed case, Set-Cookie among them and values that need
 * trimming, must leave both reading the same through every accessor; names and values the
 * standard refuses must be refused by both.
 */
import { describe, expect, it } from "vitest";
import { createResponseHeaders } from "../src/lean/response-headers.ts";

const NAMES = [
  "content-type",
  "Content-Type",
  "x-request-id",
  "grpc-encoding",
  "Set-Cookie",
  "set-cookie",
  "a",
  "zz-last",
  "b-2",
];
const VALUES = [
  "application/grpc",
  "  padded\t",
  "x, y",
  "",
  "\r\nwrapped\r\n",
  "ünïcödé-latin1",
  "v=1; Path=/",
];

/** A small deterministic generator, so a failure is reproducible from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

function readAll(headers: Headers) {
  const walked: [string, string, boolean][] = [];
  headers.forEach((value, key, parent) => {
    walked.push([key, value, parent === headers]);
  });
  return {
    entries: [...headers.entries()],
    iterated: [...headers],
    keys: [...headers.keys()],
    values: [...headers.values()],
    walked,
    cookies: headers.getSetCookie(),
    got: NAMES.map((name) => [headers.get(name), headers.has(name)]),
  };
}

describe("response headers", () => {
  it("read as undici's Headers reads after any sequence of changes", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
      const ours = createResponseHeaders();
      const theirs = new Headers();
      const steps = 1 + Math.floor(next() * 12);
      for (let i = 0; i < steps; i++) {
        const op = pick(["set", "append", "append", "delete"] as const);
        const name = pick(NAMES);
        if (op === "delete") {
          ours.delete(name);
          theirs.delete(name);
        } else {
          const value = pick(VALUES);
          ours[op](name, value);
          theirs[op](name, value);
        }
        expect(readAll(ours), `seed ${seed}, step ${i}`).toEqual(readAll(theirs));
      }
    }
  });

  it("refuses what the standard refuses, as undici does", () => {
    const badNames = ["", "bad name", "naïve", "colon:", "new\nline"];
    const badValues = ["a\0b", "line\nbreak inside", "carriage\rreturn inside", "beyond-latin1-€"];
    for (const name of badNames) {
      for (const op of ["set", "append", "get", "has", "delete"] as const) {
        const call = (h: Headers) => (op === "set" || op === "append" ? h[op](name, "v") : h[op](name));
        expect(() => call(new Headers()), `${op} "${name}" (undici)`).toThrow(TypeError);
        expect(() => call(createResponseHeaders()), `${op} "${name}"`).toThrow(TypeError);
      }
    }
    for (const value of badValues) {
      expect(() => new Headers().set("x", value)).toThrow(TypeError);
      expect(() => createResponseHeaders().set("x", value), JSON.stringify(value)).toThrow(TypeError);
      expect(() => createResponseHeaders().append("x", value), JSON.stringify(value)).toThrow(TypeError);
    }
  });

  it("copies into a Headers and back like one", () => {
    const ours = createResponseHeaders();
    ours.set("X-B", "2");
    ours.append("x-a", "1");
    ours.append("set-cookie", "c=1");
    ours.append("set-cookie", "d=2");
    const copy = new Headers(ours);
    expect([...copy]).toEqual([...ours]);
    expect(copy.getSetCookie()).toEqual(["c=1", "d=2"]);
    expect(Object.prototype.toString.call(ours)).toBe("[object Headers]");
  });
});
