/**
 * The interceptors every call passes, outermost first. Logging and metrics see every call as its
 * caller does, so they sit outside the conversion of errors to the codes callers receive.
 * Authentication, scopes and rate limits come last: their refusals are logged, counted and
 * answered like any other error.
 */
import type { Interceptor } from "@connectrpc/connect";
import type { AppContext } from "../app-context.ts";
import { createRateLimiter } from "../auth/rate-limiter.ts";
import { createAuthInterceptor } from "../rpc/auth-interceptor.ts";
import { createErrorInterceptor } from "../rpc/connect-error-from.ts";
import { createDeadlineInterceptor } from "../rpc/deadline.ts";
import { createLoggingInterceptor, createUnexpectedErrorLogger } from "../rpc/logging-interceptor.ts";

export interface ServerInterceptorsOptions {
  readonly context: AppContext;
  /** The metrics' interceptor: counts, times and gauges every call. */
  readonly metrics: Interceptor;
  /** A request turned away before any service saw it, by reason. */
  readonly rejected: (reason: string) => void;
}

export function createServerInterceptors(options: ServerInterceptorsOptions): Interceptor[] {
  const { context, rejected } = options;
  const { config, logger } = context;
  const { auth } = config;
  return [
    createLoggingInterceptor({ logger }),
    options.metrics,
    createDeadlineInterceptor(),
    createErrorInterceptor(createUnexpectedErrorLogger(logger)),
    createAuthInterceptor({
      mode: auth.mode,
      keys: context.apiKeys,
      limiter: createRateLimiter(),
      limits: {
        read: { name: "read", ...auth.read },
        write: { name: "write", ...auth.write },
        anonymous: { name: "anonymous", ...auth.anonymous },
      },
      publicTokenReads: auth.publicTokenReads,
      publicReflection: auth.publicReflection,
      onRejected: rejected,
    }),
  ];
}
