import { Code, type Interceptor } from "@connectrpc/connect";
import { codeOf } from "./call-labels.ts";

type Next = Parameters<Interceptor>[0];
type Request = Parameters<Next>[0];
type Response = Awaited<ReturnType<Next>>;

/**
 * Calls `next` and reports, once, how the call ended: `undefined` for success, else the status
 * code the caller sees. A unary call ends when `next` settles; a streaming call only when its last
 * response message has gone out (or it failed, or the caller went away), which is why its message
 * iterable is wrapped. Unary calls, the hot path, allocate nothing here beyond the await.
 */
export async function observeCall(
  next: Next,
  req: Request,
  onEnd: (code: Code | undefined) => void,
): Promise<Response> {
  let res: Response;
  try {
    res = await next(req);
  } catch (error) {
    onEnd(codeOf(error));
    throw error;
  }
  if (!res.stream) {
    onEnd(undefined);
    return res;
  }
  return { ...res, message: untilEnd(res.message, req.signal, onEnd) };
}

async function* untilEnd<T>(
  messages: AsyncIterable<T>,
  signal: AbortSignal,
  onEnd: (code: Code | undefined) => void,
): AsyncGenerator<T> {
  let code: Code | undefined;
  try {
    yield* messages;
  } catch (error) {
    code = codeOf(error);
    throw error;
  } finally {
    // Ended early without an error: the caller cancelled or disconnected.
    onEnd(code ?? (signal.aborted ? Code.Canceled : undefined));
  }
}
