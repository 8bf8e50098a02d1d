/**
 * The runs in flight and the room left, alone: a run waiting on its upstream is out of the count,
 * an upstream never holds more runs than its calls, and a full one with half its room free again
 * asks for a poll.
 */
import { describe, expect, it } from "vitest";
import { createRunCapacity } from "../src/scheduler/stages/run-capacity.ts";

const SWAP_API = { name: "swap-api", calls: 2 };
const run = () => ({ done: Promise.resolve(), abort: new AbortController() });

describe("run capacity", () => {
  it("counts the runs in flight against the concurrency", () => {
    const capacity = createRunCapacity({ concurrency: 2 });
    capacity.add("a", run());
    expect(capacity.free()).toBe(1);
    capacity.add("b", run());
    expect(capacity.free()).toBe(0);
    capacity.remove("a");
    expect(capacity.free()).toBe(1);
    expect([...capacity.running.keys()]).toEqual(["b"]);
  });

  it("holds no more runs on an upstream than its calls, and asks for a poll once half its room is free", () => {
    const capacity = createRunCapacity({ concurrency: 4 });
    expect(capacity.enterUpstream(SWAP_API)).toBe(true);
    expect(capacity.enterUpstream(SWAP_API)).toBe(true);
    expect(capacity.enterUpstream(SWAP_API)).toBe(false);
    expect(capacity.roomOnFullUpstream()).toBe(false);
    capacity.leaveUpstream(SWAP_API);
    expect(capacity.roomOnFullUpstream()).toBe(true);
    // A poll begins: what it found full is forgotten until it finds it full again.
    capacity.clearFull();
    expect(capacity.roomOnFullUpstream()).toBe(false);
  });

  it("takes a run waiting on its upstream out of the count, and gives its place there up once answered", async () => {
    const capacity = createRunCapacity({ concurrency: 1 });
    capacity.add("swap", run());
    expect(capacity.enterUpstream(SWAP_API)).toBe(true);
    const place = { held: true };
    const freed: (string | undefined)[] = [];
    const awaiting = capacity.awaitingUpstream("swap", SWAP_API, place, (u) => freed.push(u?.name));
    let answer: (route: string) => void = () => {};
    const route = awaiting(() => new Promise<string>((resolve) => (answer = resolve)));
    // While it waits, its slot is free for another run.
    expect(capacity.free()).toBe(1);
    expect(freed).toEqual([undefined]);
    answer("route");
    expect(await route).toBe("route");
    expect(capacity.free()).toBe(0);
    expect(place.held).toBe(false);
    expect(freed).toEqual([undefined, "swap-api"]);
    // Its place on the upstream went to the next run: two more fit.
    expect(capacity.enterUpstream(SWAP_API)).toBe(true);
    expect(capacity.enterUpstream(SWAP_API)).toBe(true);
    expect(capacity.enterUpstream(SWAP_API)).toBe(false);
  });
});
