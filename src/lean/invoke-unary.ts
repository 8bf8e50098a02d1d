import { create, type DescMessage, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  type Interceptor,
  type MethodImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { handlerContextOf, intercepted } from "./handler-context.ts";

/** One unary method as the service implements it. */
export interface UnaryMethodImpl {
  readonly method: DescMethodUnary;
  readonly impl: MethodImpl<DescMethodUnary<DescMessage, DescMessage>>;
}

/** A decoded unary call, ready for the interceptors and the implementation. */
export interface UnaryCall {
  readonly target: UnaryMethodImpl;
  readonly message: MessageShape<DescMessage>;
  readonly protocolName: string;
  readonly requestMethod: string;
  readonly url: string;
  readonly header: Headers;
  readonly contextValues: ContextValues;
  readonly signal: AbortSignal;
  /** The call's deadline as a `performance.now()` time, when it has one. */
  readonly deadline: number | undefined;
}

/** How a call ended: its answer or its error, with the headers and trailers to send either way. */
export type UnaryOutcome = { readonly header: Headers; readonly trailer: Headers } & (
  | { readonly message: MessageShape<DescMessage>; readonly error?: undefined }
  | { readonly message?: undefined; readonly error: ConnectError }
);

/**
 * Runs a unary call through `interceptors` (outermost first) to the implementation, as connect's
 * handlers do: the same request and response objects, the same HandlerContext, so interceptors
 * and service implementations cannot tell the paths apart. The implementation's answer is
 * completed into a message (implementations may answer with an init object); anything thrown
 * that is not a ConnectError becomes a bare `internal`, as connect answers it.
 */
export async function invokeUnary(
  call: UnaryCall,
  interceptors: readonly Interceptor[],
): Promise<UnaryOutcome> {
  const { target } = call;
  const header = new Headers();
  const trailer = new Headers();
  const last = async (req: UnaryRequest): Promise<UnaryResponse> => {
    const context = handlerContextOf(req, {
      method: target.method,
      requestMethod: call.requestMethod,
      protocolName: call.protocolName,
      url: call.url,
      deadline: call.deadline,
      responseHeader: header,
      responseTrailer: trailer,
    });
    const output = await target.impl(req.message, context);
    return {
      stream: false,
      service: req.service,
      method: target.method,
      header,
      trailer,
      message: create(target.method.output, output),
    };
  };
  const next = intercepted(interceptors, last as Parameters<Interceptor>[0]);
  const request: UnaryRequest = {
    stream: false,
    service: target.method.parent,
    method: target.method,
    requestMethod: call.requestMethod,
    url: call.url,
    signal: call.signal,
    header: call.header,
    contextValues: call.contextValues,
    message: call.message,
  };
  try {
    const res = (await next(request)) as UnaryResponse;
    copyHeaders(res.header, header);
    copyHeaders(res.trailer, trailer);
    return { message: res.message, header, trailer };
  } catch (error) {
    return {
      error:
        error instanceof ConnectError
          ? error
          : new ConnectError("internal error", Code.Internal, undefined, undefined, error),
      header,
      trailer,
    };
  }
}

/** An interceptor may answer with headers of its own making; they replace the call's. */
function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => {
    to.set(key, value);
  });
}
