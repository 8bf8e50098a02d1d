import type { DescMethod } from "@bufbuild/protobuf";
import type { HandlerContext, Interceptor, StreamRequest, UnaryRequest } from "@connectrpc/connect";

/**
 * The HandlerContext connect's handlers give an implementation, for a call the lean path runs:
 * the same fields, so implementations cannot tell the paths apart.
 */
export function handlerContextOf(
  req: UnaryRequest | StreamRequest,
  call: {
    readonly method: DescMethod;
    readonly requestMethod: string;
    readonly protocolName: string;
    readonly url: string;
    /** The call's deadline as a `performance.now()` time, when it has one. */
    readonly deadline: number | undefined;
    readonly responseHeader: Headers;
    readonly responseTrailer: Headers;
  },
): HandlerContext {
  const { deadline } = call;
  return {
    method: call.method,
    service: req.service,
    signal: req.signal,
    timeoutMs:
      deadline === undefined ? () => undefined : () => Math.max(0, Math.round(deadline - performance.now())),
    requestMethod: call.requestMethod,
    requestHeader: req.header,
    responseHeader: call.responseHeader,
    responseTrailer: call.responseTrailer,
    protocolName: call.protocolName,
    values: req.contextValues,
    url: call.url,
  };
}

/** `last` behind `interceptors`, outermost first, as connect applies them. */
export function intercepted(
  interceptors: readonly Interceptor[],
  last: Parameters<Interceptor>[0],
): Parameters<Interceptor>[0] {
  let next = last;
  for (let i = interceptors.length - 1; i >= 0; i--) next = (interceptors[i] as Interceptor)(next);
  return next;
}
