import { create, type DescMessage, type DescMethodUnary, type MessageShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  createContextKey,
  type Interceptor,
  type MethodImpl,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { handlerContextOf, intercepted } from "./handler-context.ts";
import { createResponseHeaders } from "./response-headers.ts";

/** One unary method as the service implements it. */
export interface UnaryMethodImpl {
  readonly method: DescMethodUnary;
  readonly impl: MethodImpl<DescMethodUnary<DescMessage, DescMessage>>;
}

/** A decoded unary call, ready for the interceptors and the implementation. */
export interface UnaryCall {
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

/** Runs one call of a method; never throws. */
export type UnaryInvoker = (call: UnaryCall) => Promise<UnaryOutcome>;

/**
 * What the implementation's HandlerContext needs from the call and the request does not carry.
 * It travels in the call's context values, which every interceptor passes on as they are, so
 * the chain of interceptors can be put together once per method instead of on every call.
 */
interface CallState {
  readonly protocolName: string;
  readonly deadline: number | undefined;
  readonly header: Headers;
  readonly trailer: Headers;
}

const callStateKey = createContextKey<CallState | undefined>(undefined, { description: "lean unary call" });

/**
 * Runs unary calls of one method through `interceptors` (outermost first) to the implementation,
 * as connect's handlers do: the same request and response objects, the same HandlerContext, so
 * interceptors and service implementations cannot tell the paths apart. The implementation's
 * answer is completed into a message (implementations may answer with an init object); anything
 * thrown that is not a ConnectError becomes a bare `internal`, as connect answers it.
 */
export function createUnaryInvoker(
  target: UnaryMethodImpl,
  interceptors: readonly Interceptor[],
): UnaryInvoker {
  const { method, impl } = target;
  const last = async (req: UnaryRequest): Promise<UnaryResponse> => {
    const state = req.contextValues.get(callStateKey) as CallState;
    const context = handlerContextOf(req, {
      method,
      requestMethod: req.requestMethod,
      protocolName: state.protocolName,
      url: req.url,
      deadline: state.deadline,
      responseHeader: state.header,
      responseTrailer: state.trailer,
    });
    const output = await impl(req.message, context);
    return {
      stream: false,
      service: req.service,
      method,
      header: state.header,
      trailer: state.trailer,
      message: create(method.output, output),
    };
  };
  const next = intercepted(interceptors, last as Parameters<Interceptor>[0]);
  return async (call) => {
    const header = createResponseHeaders();
    const trailer = createResponseHeaders();
    call.contextValues.set(callStateKey, {
      protocolName: call.protocolName,
      deadline: call.deadline,
      header,
      trailer,
    });
    const request: UnaryRequest = {
      stream: false,
      service: method.parent,
      method,
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
  };
}

/** An interceptor may answer with headers of its own making; they replace the call's. */
function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  for (const key of [...to.keys()]) to.delete(key);
  // Appended: a walk gives each Set-Cookie on its own, and all of them are kept.
  from.forEach((value, key) => {
    to.append(key, value);
  });
}
