import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/health/v1/health_pb.ts";
import { quote } from "../domain/errors.ts";
import type { ReadinessPoller } from "./readiness-poller.ts";

type Status = ServingStatus;

/**
 * grpc.health.v1.Health (https://github.com/grpc/grpc/blob/master/doc/health-checking.md), so load
 * balancers, Kubernetes' gRPC probes and grpc-health-probe can ask the service itself.
 *
 * Each service is SERVING while the dependency it needs answers (`services` maps a service to the
 * readiness of its dependency: the chain for TokenService, the agent store for AgentService), and
 * "" (the server as a whole) while all of them do. Once `shutdownSignal` aborts, everything is
 * NOT_SERVING, so balancers drain the server while calls in flight finish.
 *
 * Check of an unknown service fails with NOT_FOUND; Watch of one answers SERVICE_UNKNOWN and
 * stays open, as the protocol asks. Watch sends the current status at once and then each change,
 * found by the readiness pollers (one per dependency, shared by all watchers), and ends when the
 * caller goes away or, after a last NOT_SERVING, at shutdown, so it never holds up a drain.
 */
export function createHealthService(options: {
  /** Service names this server answers for, besides "" (overall), each with its dependency's readiness. */
  services: Readonly<Record<string, ReadinessPoller>>;
  shutdownSignal?: AbortSignal;
}): ServiceImpl<typeof Health> {
  const dependencies = new Map<string, readonly ReadinessPoller[]>(
    Object.entries(options.services).map(([service, poller]) => [service, [poller]]),
  );
  dependencies.set("", [...new Set(Object.values(options.services))]);
  const shutdown = options.shutdownSignal;
  // Four possible answers, made once: a check allocates no response of its own.
  const responses = new Map<Status, HealthCheckResponse>(
    Object.values(ServingStatus).map((status) => [status, create(HealthCheckResponseSchema, { status })]),
  );
  const response = (status: Status) => responses.get(status) ?? create(HealthCheckResponseSchema, { status });

  const currentStatus = async (service: string): Promise<Status> => {
    if (shutdown?.aborted === true) return ServingStatus.NOT_SERVING;
    const ready = await Promise.all((dependencies.get(service) ?? []).map((poller) => poller.check()));
    return ready.every(Boolean) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };

  return {
    async check(req) {
      if (!dependencies.has(req.service)) {
        throw new ConnectError(`unknown service ${quote(req.service)}`, Code.NotFound);
      }
      return response(await currentStatus(req.service));
    },

    async list() {
      const statuses: Record<string, HealthCheckResponse> = {};
      for (const service of dependencies.keys()) statuses[service] = response(await currentStatus(service));
      return create(HealthListResponseSchema, { statuses });
    },

    async *watch(req, ctx) {
      const service = req.service;
      const stop = shutdown === undefined ? ctx.signal : AbortSignal.any([ctx.signal, shutdown]);
      let wake: (() => void) | undefined;
      const onStop = () => wake?.();
      stop.addEventListener("abort", onStop);
      const unsubscribes: (() => void)[] = [];
      try {
        const pollers = dependencies.get(service);
        if (pollers === undefined) {
          // The set of services is fixed at startup: this one will not become known.
          yield response(ServingStatus.SERVICE_UNKNOWN);
          if (!stop.aborted) await new Promise<void>((resolve) => (wake = resolve));
          return;
        }
        const ready = new Map<ReadinessPoller, boolean>();
        const answers = await Promise.all(pollers.map((poller) => poller.check()));
        pollers.forEach((poller, i) => {
          ready.set(poller, answers[i] === true);
        });
        const statusNow = () =>
          pollers.every((p) => ready.get(p)) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
        let latest = statusNow();
        let sent: Status | undefined;
        for (const poller of pollers) {
          unsubscribes.push(
            poller.subscribe((answer) => {
              ready.set(poller, answer);
              latest = statusNow();
              wake?.();
            }),
          );
        }
        for (;;) {
          if (ctx.signal.aborted) return;
          if (stop.aborted) latest = ServingStatus.NOT_SERVING;
          if (latest !== sent) {
            sent = latest;
            yield response(sent);
          }
          if (stop.aborted) return;
          if (latest === sent) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      } finally {
        for (const unsubscribe of unsubscribes) unsubscribe();
        stop.removeEventListener("abort", onStop);
      }
    },
  };
}
