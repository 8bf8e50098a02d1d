/**
 * Request ids made without a caller's: version 4 UUIDs (RFC 9562), each one different, across
 * refills of the random pool they come from; a caller's sane id is kept as it is.
 */
import { describe, expect, it } from "vitest";
import { createRequestIds } from "../src/rpc/request-id.ts";

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("request ids", () => {
  it("are distinct version 4 UUIDs, across refills of the pool", () => {
    const ids = createRequestIds();
    const made = Array.from({ length: 2_000 }, () => ids(null));
    for (const id of made) expect(id).toMatch(V4);
    expect(new Set(made).size).toBe(made.length);
    // Every hex digit shows up in every free position: the bytes are random, not a counter.
    const digits = new Set(made.flatMap((id) => [...id.slice(0, 8)]));
    expect(digits.size).toBe(16);
  });

  it("keep a caller's sane id and replace any other", () => {
    const ids = createRequestIds();
    expect(ids("trace-1.A_b")).toBe("trace-1.A_b");
    expect(ids("a".repeat(128))).toBe("a".repeat(128));
    for (const bad of ["", "a".repeat(129), "has space", "semi;colon", "ünï"]) expect(ids(bad)).toMatch(V4);
  });

  it("hand out a new string each time, not a view of the reused buffer", () => {
    const ids = createRequestIds();
    const first = ids(null);
    const copy = `${first}`;
    ids(null);
    expect(first).toBe(copy);
  });
});
