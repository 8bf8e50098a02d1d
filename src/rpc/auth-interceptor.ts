import type { DescMethod } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Scope } from "../auth/api-key.ts";
import type { ApiKeys } from "../auth/api-keys.ts";
import type { RateDecision, RateLimiter, RatePolicy } from "../auth/rate-limiter.ts";
import { clientAddressKey } from "./client-address.ts";
import { callerCapsKey, keyIdKey, principalKey } from "./principal.ts";

export type AuthRejection = "unauthenticated" | "permission_denied" | "rate_limited";

export interface AuthOptions {
  /**
   * "apikey": every call but health (and public reflection, token reads) needs a key. "none":
   * calls need no key and run as "anonymous", except ApiKeyService, which always needs an admin
   * key (so with AUTH_MODE=none and no ADMIN_API_KEY nobody can list or make keys).
   */
  readonly mode: "apikey" | "none";
  readonly keys: ApiKeys;
  readonly limiter: RateLimiter;
  readonly limits: { readonly read: RatePolicy; readonly write: RatePolicy; readonly anonymous: RatePolicy };
  /** TokenService reads answer callers without a key (limited per address). */
  readonly publicTokenReads: boolean;
  /** Server reflection answers callers without a key. */
  readonly publicReflection: boolean;
  /** Told of every call refused here, by reason (never by key). */
  readonly onRejected?: (reason: AuthRejection) => void;
}

/** What a method asks of its caller. */
interface Rule {
  /** No key needed (health; reflection when public). */
  readonly open: boolean;
  /** No key needed, but callers without one share their address' budget (public token reads). */
  readonly openToAnonymous: boolean;
  /** The scope a key needs; undefined: any valid key. */
  readonly scope: Scope | undefined;
  readonly budget: "read" | "write";
}

const SCOPE_OF_SERVICE: Record<string, (method: DescMethod) => Scope> = {
  "token.v1.TokenService": () => "tokens:read",
  "agent.v1.AgentService": (method) => (isRead(method) ? "agents:read" : "agents:write"),
  // Webhooks carry agent events: registering one is a change to what the owner's agents do.
  "webhook.v1.WebhookService": (method) => (isRead(method) ? "agents:read" : "agents:write"),
  "auth.v1.ApiKeyService": () => "admin",
};
const HEALTH = "grpc.health.v1.Health";
/** Methods anyone may call: the executor's address is public, as any on-chain delegate is. */
const PUBLIC_METHODS = new Set(["agent.v1.AgentService.GetExecutor"]);
const REFLECTION = new Set([
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
]);
const BEARER = /^Bearer +(\S+)$/i;

function isRead(method: DescMethod): boolean {
  return method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}

/**
 * API keys, scopes and rate limits (AUTH_MODE=apikey), for every RPC on every protocol and path.
 *
 * A call presents `authorization: Bearer <key>`. A missing, unknown or revoked key is
 * unauthenticated; a key without the method's scope is permission_denied; a key over its budget
 * (reads and writes each have one) is resource_exhausted with Retry-After and the IETF RateLimit
 * and RateLimit-Policy fields, as headers for Connect and REST and as trailers for gRPC. Calls
 * without a valid key (public token reads, failed attempts) are limited per client address, so
 * guessing keys is slow and costs the store nothing once an address has spent its budget. The
 * key's owner becomes the call's principal: agents and runs are that owner's alone.
 */
export function createAuthInterceptor(options: AuthOptions): Interceptor {
  const { keys, limiter, limits } = options;
  const onRejected = options.onRejected ?? (() => {});
  const rules = new WeakMap<DescMethod, Rule>();
  const ruleOf = (method: DescMethod): Rule => {
    let rule = rules.get(method);
    if (rule === undefined) {
      const service = method.parent.typeName;
      const scope = SCOPE_OF_SERVICE[service]?.(method);
      const keysOff = options.mode === "none" && scope !== "admin";
      rule = {
        open:
          keysOff ||
          service === HEALTH ||
          PUBLIC_METHODS.has(`${service}.${method.name}`) ||
          (options.publicReflection && REFLECTION.has(service)),
        openToAnonymous: options.publicTokenReads && scope === "tokens:read",
        scope,
        budget: isRead(method) ? "read" : "write",
      };
      rules.set(method, rule);
    }
    return rule;
  };

  return (next) => (req) => {
    const rule = ruleOf(req.method);
    // Not async for open calls: they pay one map lookup here, not a promise.
    return rule.open ? next(req) : guarded(next, req, rule);
  };

  async function guarded(
    next: Parameters<Interceptor>[0],
    req: Parameters<Parameters<Interceptor>[0]>[0],
    rule: Rule,
  ): ReturnType<Parameters<Interceptor>[0]> {
    const address = `address ${req.contextValues.get(clientAddressKey)}`;
    const header = req.header.get("authorization");
    if (header === null && rule.openToAnonymous) {
      const decision = limiter.take(address, limits.anonymous);
      if (!decision.allowed) throw refused(decision, limits.anonymous);
      const res = await next(req);
      setRateLimitFields(res.header, decision, limits.anonymous);
      return res;
    }
    const key = header === null ? undefined : BEARER.exec(header)?.[1];
    // An address that has spent its budget on failed attempts has its keys checked against the
    // recently verified ones only: guessing stops costing the store anything, while keys in use
    // from the same address (behind one NAT, say) keep working.
    const exhausted = !limiter.has(address, limits.anonymous);
    const caller = key === undefined ? undefined : await keys.verify(key, { cachedOnly: exhausted });
    if (caller === undefined) {
      if (exhausted) throw refused(limiter.take(address, limits.anonymous), limits.anonymous);
      limiter.take(address, limits.anonymous);
      onRejected("unauthenticated");
      throw new ConnectError(
        header === null
          ? "this call needs an API key, sent as the header authorization Bearer <key>"
          : key === undefined
            ? "the authorization header must be Bearer followed by an API key"
            : "the API key is not valid (unknown or revoked)",
        Code.Unauthenticated,
      );
    }
    // Known from here on: refusals below are logged with the key's id.
    req.contextValues.set(principalKey, caller.owner);
    req.contextValues.set(keyIdKey, caller.keyId);
    if (caller.caps !== undefined) req.contextValues.set(callerCapsKey, caller.caps);
    if (rule.scope !== undefined && !caller.scopes.has(rule.scope)) {
      onRejected("permission_denied");
      throw new ConnectError(
        `this call needs an API key with the scope "${rule.scope}"`,
        Code.PermissionDenied,
      );
    }
    const policy = limits[rule.budget];
    const decision = limiter.take(`key ${caller.keyId} ${rule.budget}`, policy);
    if (!decision.allowed) throw refused(decision, policy);
    const res = await next(req);
    setRateLimitFields(res.header, decision, policy);
    return res;
  }

  function refused(decision: RateDecision, policy: RatePolicy): ConnectError {
    onRejected("rate_limited");
    const metadata = new Headers({ "retry-after": String(decision.retryAfterSeconds) });
    setRateLimitFields(metadata, decision, policy);
    return new ConnectError(
      `rate limit exceeded for ${policy.name} calls. Retry after ${decision.retryAfterSeconds} seconds`,
      Code.ResourceExhausted,
      metadata,
    );
  }
}

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers): the policy as a quota of
 * `burst` calls per `burst / rate` seconds, and what is left of it.
 */
function setRateLimitFields(headers: Headers, decision: RateDecision, policy: RatePolicy): void {
  const window = Math.max(1, Math.ceil(policy.burst / policy.rate));
  headers.set("ratelimit-policy", `"${policy.name}";q=${policy.burst};w=${window}`);
  headers.set("ratelimit", `"${policy.name}";r=${decision.remaining};t=${decision.resetSeconds}`);
}
