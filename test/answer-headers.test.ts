/**
 * The lean path's answer headers behave as the platform's Headers do: the same seeded sequences
 * of operations (mixed-case names, set-cookie, values to trim, invalid names and values) go to
 * both, and every result, every thrown TypeError and every iteration must be the same.
 */
import { describe, expect, it } from "vitest";
import { createAnswerHeaders } from "../src/lean/answer-headers.ts";

const NAMES = [
  "x-request-id",
  "X-Request-Id",
  "content-type",
  "Set-Cookie",
  "set-cookie",
  "a",
  "ratelimit",
  "x y",
  "é",
  "",
];
const VALUES = ["v", " padded\t", "a, b", "", "tab\tinside", "bad\nline", "nul\0", "€uro", "latin1 ñ", "  "];

/** A small deterministic generator (mulberry32), so a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function outcome(run: () => unknown): unknown {
  try {
    return { value: run() };
  } catch (error) {
    return { threw: (error as Error).constructor.name, message: (error as Error).message };
  }
}

describe("answer headers", () => {
  it("answer every operation as the platform's Headers does", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const pick = <T>(list: T[]) => list[Math.floor(next() * list.length)] as T;
      const ours = createAnswerHeaders();
      const theirs = new Headers();
      for (let step = 0; step < 12; step++) {
        const name = pick(NAMES);
        const value = pick(VALUES);
        const op = pick(["set", "append", "delete", "get", "has", "getSetCookie"] as const);
        const apply = (h: Headers) => () => {
          switch (op) {
            case "set":
              return h.set(name, value);
            case "append":
              return h.append(name, value);
            case "delete":
              return h.delete(name);
            case "get":
              return h.get(name);
            case "has":
              return h.has(name);
            case "getSetCookie":
              return h.getSetCookie();
          }
        };
        const context = `seed ${seed} step ${step}: ${op}(${JSON.stringify(name)}, ${JSON.stringify(value)})`;
        expect(outcome(apply(ours)), context).toEqual(outcome(apply(theirs)));
        expect([...ours], context).toEqual([...theirs]);
      }
      const seen: [string, string][] = [];
      ours.forEach((value, key, parent) => {
        expect(parent).toBe(ours);
        seen.push([key, value]);
      });
      expect(seen).toEqual([...theirs.entries()]);
      expect([...ours.keys()]).toEqual([...theirs.keys()]);
      expect([...ours.values()]).toEqual([...theirs.values()]);
    }
  });
});
