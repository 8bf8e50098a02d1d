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
import { createReadinessPoller } from "./readiness-poller.ts";

type Status = ServingStatus;

/**
 * grpc.health.v1.Health (https://github.com/grpc/grpc/blob/master/doc/health-checking.md), so load
 * balancers, Kubernetes' gRPC probes and grpc-health-probe can ask the service itself.
 *
 * "" (the server as a whole) and each of `services` are SERVING while `isReady` says the
 * dependencies answer, except the `selfContained` services, which need none (the token catalog is
 * embedded) and keep serving through a database outage. Once `shutdownSignal` aborts, everything is
 * NOT_SERVING, so balancers drain the server while calls in flight finish.
 *
 * Check of an unknown service fails with NOT_FOUND; Watch of one answers SERVICE_UNKNOWN and
 * stays open, as the protocol asks. Watch sends the current status at once and then each change,
 * found by polling `isReady` every `pollIntervalMs` (one poller shared by all watchers), and ends
 * when the caller goes away or, after a last NOT_SERVING, at shutdown, so it never holds up a drain.
 */
export function createHealthService(options: {
  isReady: () => Promise<boolean>;
  /** Service names this server answers for, besides "" (overall). */
  services: readonly string[];
  /** Those of `services` that do not depend on `isReady`. */
  selfContained?: readonly string[];
  pollIntervalMs?: number;
  shutdownSignal?: AbortSignal;
}): ServiceImpl<typeof Health> {
  const known = new Set(["", ...options.services]);
  const selfContained = new Set(options.selfContained ?? []);
  const shutdown = options.shutdownSignal;
  const readiness = createReadinessPoller({
    isReady: options.isReady,
    intervalMs: options.pollIntervalMs ?? 1000,
  });
  // Four possible answers, made once: a check allocates no response of its own.
  const responses = new Map<Status, HealthCheckResponse>(
    Object.values(ServingStatus).map((status) => [status, create(HealthCheckResponseSchema, { status })]),
  );
  const response = (status: Status) => responses.get(status) ?? create(HealthCheckResponseSchema, { status });

  const statusOf = (service: string, ready: boolean): Status =>
    shutdown?.aborted === true
      ? ServingStatus.NOT_SERVING
      : selfContained.has(service) || ready
        ? ServingStatus.SERVING
        : ServingStatus.NOT_SERVING;

  /** Asks `isReady` only when the answer depends on it. */
  const currentStatus = async (service: string): Promise<Status> =>
    shutdown?.aborted === true || selfContained.has(service)
      ? statusOf(service, true)
      : statusOf(service, await readiness.check());

  return {
    async check(req) {
      if (!known.has(req.service)) {
        throw new ConnectError(`unknown service ${quote(req.service)}`, Code.NotFound);
      }
      return response(await currentStatus(req.service));
    },

    async list() {
      const ready = await readiness.check();
      const statuses: Record<string, HealthCheckResponse> = {};
      for (const service of known) statuses[service] = response(statusOf(service, ready));
      return create(HealthListResponseSchema, { statuses });
    },

    async *watch(req, ctx) {
      const service = req.service;
      const stop = shutdown === undefined ? ctx.signal : AbortSignal.any([ctx.signal, shutdown]);
      let wake: (() => void) | undefined;
      const onStop = () => wake?.();
      stop.addEventListener("abort", onStop);
      let unsubscribe = () => {};
      try {
        if (!known.has(service)) {
          // The set of services is fixed at startup: this one will not become known.
          yield response(ServingStatus.SERVICE_UNKNOWN);
          if (!stop.aborted) await new Promise<void>((resolve) => (wake = resolve));
          return;
        }
        let latest = await currentStatus(service);
        let sent: Status | undefined;
        if (!selfContained.has(service)) {
          unsubscribe = readiness.subscribe((ready) => {
            latest = statusOf(service, ready);
            wake?.();
          });
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
        unsubscribe();
        stop.removeEventListener("abort", onStop);
      }
    },
  };
}
