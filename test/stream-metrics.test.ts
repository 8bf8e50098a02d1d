/**
 * The stream metrics of one registry, read as Prometheus reads them: `streams_open` counts every
 * stream of an RPC open at once, however many streams bound its counters.
 */
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registerStreamMetrics } from "../src/observability/stream-metrics.ts";

async function openGauge(registry: Registry, rpc: string): Promise<number | undefined> {
  const metric = await registry.getSingleMetric("streams_open")?.get();
  return metric?.values.find((v) => v.labels.rpc === rpc)?.value;
}

describe("stream metrics", () => {
  it("show 0 before the first stream, then the streams open at once, and 0 again once all closed", async () => {
    const registry = new Registry();
    const metrics = registerStreamMetrics(registry);
    // Each stream binds the counters of its RPC when it opens, as serveStream does.
    const first = metrics.of("WatchAgentEvents");
    expect(await openGauge(registry, "WatchAgentEvents")).toBe(0);
    first.opened();
    const second = metrics.of("WatchAgentEvents");
    second.opened();
    const third = metrics.of("WatchAgentEvents");
    third.opened();
    expect(await openGauge(registry, "WatchAgentEvents")).toBe(3);
    first.closed();
    second.closed();
    third.closed();
    expect(await openGauge(registry, "WatchAgentEvents")).toBe(0);
  });
});
