import { create, getOption, hasOption, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { readAllBytes, type UniversalHandler } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { http } from "../../gen/google/api/annotations_pb.ts";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.ts";
import type { FieldViolation } from "../domain/errors.ts";
import { quote } from "../domain/errors.ts";
import { PAGE_LIMIT_RULE } from "../domain/page-limit.ts";
import type { RequestHandler } from "../http/dual-protocol-server.ts";
import { restCallKey } from "../rpc/call-labels.ts";
import { serveEventStream } from "./event-stream.ts";
import { jsonValueFromText } from "./field-value.ts";
import { type RestBinding, restBindingsOf, type UrlField } from "./rest-bindings.ts";

type NodeHandler = (...args: Parameters<RequestHandler>) => boolean;

/** Request headers that belong to the REST request's own framing, not to the call. */
const FRAMING = new Set([
  "content-type",
  "content-length",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "te",
  "upgrade",
  "trailer",
  "expect",
]);

/**
 * Serves every RPC that carries a google.api.http rule on its REST path, generically: the routes
 * come from the rules of the methods the handlers serve, read once here, so an RPC annotated in
 * the contract is served over REST with no code of its own.
 *
 * A REST request becomes the request message's JSON (path variables, query parameters and the
 * body as the rule says, each checked against its field's type), and is handed to the method's
 * Connect handler as a Connect unary JSON call with the caller's headers (authorization,
 * idempotency-key, x-request-id, connect-timeout-ms, ...). So the same interceptors (logs,
 * metrics, error mapping) and the same JSON options apply, the answer is exactly Connect's (the
 * envelope; errors as Connect error JSON with their HTTP status), and logs and metrics label the
 * call "rest+json". Returns true when it answered the request; false when no rule's path matches.
 */
export function createRestHandler(options: {
  handlers: readonly UniversalHandler[];
  /** Largest request body accepted (MAX_REQUEST_BYTES); larger is resource_exhausted. */
  maxRequestBytes: number;
  /** A server stream whose reader took nothing for this long is ended (STREAM_WRITE_TIMEOUT_MS). */
  streamWriteTimeoutMs: number;
  /**
   * Told of every REST request refused before it reaches the service's handler (a bad parameter,
   * body or method), which the interceptors therefore never see; counted like other refusals.
   */
  onRejected?: (reason: "rest_invalid_request" | "method_not_allowed") => void;
}): NodeHandler {
  const onRejected = options.onRejected ?? (() => {});
  // The most specific template first, so that /v1/agents/events:watch is not taken for
  // /v1/agents/{agent_id} with an id of "events:watch".
  const routes = options.handlers
    .flatMap((handler) =>
      hasOption(handler.method, http)
        ? restBindingsOf(handler.method, getOption(handler.method, http)).map((binding) =>
            routeOf(binding, handler),
          )
        : [],
    )
    .sort((a, b) => specificity(b.binding) - specificity(a.binding));
  return (req, res) => {
    const url = req.url ?? "/";
    const queryAt = url.indexOf("?");
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const allowed: string[] = [];
    let matched: number | undefined;
    for (const route of routes) {
      // Once a path has matched, a less specific template does not get it for another method:
      // GET /v1/agents/ID:pause is POST's path, not GetAgent's of an agent "ID:pause".
      if (matched !== undefined && specificity(route.binding) < matched) break;
      const values = route.binding.path.match(path);
      if (values === undefined) continue;
      matched = specificity(route.binding);
      if (route.binding.httpMethod !== req.method) {
        allowed.push(route.binding.httpMethod);
        continue;
      }
      const query = new URLSearchParams(queryAt < 0 ? "" : url.slice(queryAt + 1));
      serve(route, values, query, options, req, res).catch((reason: unknown) => {
        if (ConnectError.from(reason).code !== Code.Aborted && !res.headersSent) {
          onRejected("rest_invalid_request");
          answerError(res, reason);
        }
      });
      return true;
    }
    if (allowed.length === 0) return false;
    onRejected("method_not_allowed");
    res.setHeader("allow", allowed.join(", "));
    answerError(
      res,
      new ConnectError(
        `${quote(req.method ?? "")} is not allowed on this path: it answers ${allowed.join(" or ")} only`,
        Code.Unimplemented,
      ),
      405,
    );
    return true;
  };
}

/** Literal segments of a template, and one more for a verb: more literal text matches fewer paths. */
function specificity(binding: RestBinding): number {
  const source = binding.path.source;
  const literals = source.split("/").filter((segment) => segment !== "" && !/[{*]/.test(segment)).length;
  const verb = /:[^/}]*$/.test(source) ? 1 : 0;
  return literals + verb;
}

interface Route {
  readonly binding: RestBinding;
  readonly handler: UniversalHandler;
  /** Query fields by the names a caller may use: the JSON name and the proto name. */
  readonly queryFields: ReadonlyMap<string, UrlField>;
}

function routeOf(binding: RestBinding, handler: UniversalHandler): Route {
  const queryFields = new Map<string, UrlField>();
  for (const field of binding.queryFields) {
    queryFields.set(field.jsonPath, field);
    queryFields.set(field.protoPath, field);
  }
  return { binding, handler, queryFields };
}

async function serve(
  route: Route,
  pathValues: ReadonlyMap<string, string>,
  query: URLSearchParams,
  limits: { readonly maxRequestBytes: number; readonly streamWriteTimeoutMs: number },
  req: Parameters<RequestHandler>[0],
  res: Parameters<RequestHandler>[1],
): Promise<void> {
  const { binding } = route;
  const contextValues = createContextValues().set(restCallKey, true);
  const universal = universalRequestFromNodeRequest(req, res, undefined, contextValues);
  const violations: FieldViolation[] = [];
  let message: JsonObject = {};
  if (binding.body.kind !== "none") {
    const body = await readJsonBody(
      universal.body as AsyncIterable<Uint8Array>,
      req.headers,
      limits.maxRequestBytes,
    );
    if (binding.body.kind === "all") {
      if (typeof body !== "object" || body === null || Array.isArray(body))
        throw new ConnectError("the request body must be a JSON object", Code.InvalidArgument);
      message = body;
    } else {
      message[binding.body.field.jsonName] = body;
    }
  }
  for (const [key, texts] of groupQuery(query)) {
    const field = route.queryFields.get(key);
    if (field === undefined) {
      // The name is the caller's: quoted short if long, as any echoed input.
      violations.push({
        field: key.length <= 40 ? key : quote(key),
        description: "is not a query parameter of this method",
      });
      continue;
    }
    if (!field.repeated && texts.length > 1) {
      violations.push({ field: key, description: "may be given only once" });
      continue;
    }
    const values = convert(field, key, texts, violations);
    if (values !== undefined) put(message, field, field.repeated ? values : (values[0] as JsonValue));
  }
  for (const field of binding.pathFields) {
    const values = convert(field, field.protoPath, [pathValues.get(field.protoPath) ?? ""], violations);
    if (values !== undefined) put(message, field, values[0] as JsonValue);
  }
  if (violations.length > 0) throw invalidArgument(violations);

  const header = new Headers();
  universal.header.forEach((value, name) => {
    if (!FRAMING.has(name) && !name.startsWith("connect-") && !name.startsWith("grpc-"))
      header.set(name, value);
  });
  header.set("content-type", "application/json");
  header.set("connect-protocol-version", "1");
  const timeout = universal.header.get("connect-timeout-ms");
  if (timeout !== null) header.set("connect-timeout-ms", timeout);
  if (route.handler.method.methodKind === "server_streaming") {
    // An EventSource reconnecting says where it stopped; a cursor in the query wins.
    const lastEventId = req.headers["last-event-id"];
    if (typeof lastEventId === "string" && lastEventId !== "" && message.after === undefined) {
      if (!route.handler.method.input.fields.some((f) => f.name === "after")) {
        throw invalidArgument([{ field: "Last-Event-ID", description: "cannot resume this stream" }]);
      }
      message.after = lastEventId;
    }
    header.delete("last-event-id");
    await serveEventStream(route.handler, { ...universal, method: "POST", header }, message, res, {
      writeTimeoutMs: limits.streamWriteTimeoutMs,
    });
    return;
  }
  const response = await route.handler({ ...universal, method: "POST", header, body: message });
  await universalResponseToNodeResponse(response, res);
}

/** Reads the body (at most `maxBytes`) as JSON; an empty body is an empty object. */
async function readJsonBody(
  body: AsyncIterable<Uint8Array>,
  headers: Parameters<RequestHandler>[0]["headers"],
  maxBytes: number,
): Promise<JsonValue> {
  const type = headers["content-type"];
  if (type !== undefined && !/^application\/json\s*(;|$)/i.test(type))
    throw new ConnectError(
      "the request body must be JSON and say so in its content-type header",
      Code.InvalidArgument,
    );
  const encoding = headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity")
    throw new ConnectError(
      `content-encoding ${quote(encoding)} is not supported on REST paths`,
      Code.Unimplemented,
    );
  const length = headers["content-length"];
  const bytes = await readAllBytes(body, maxBytes, typeof length === "string" ? length : null);
  if (bytes.byteLength === 0) return {};
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as JsonValue;
  } catch {
    throw new ConnectError("the request body is not valid JSON", Code.InvalidArgument);
  }
}

function groupQuery(query: URLSearchParams): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const [key, value] of query) {
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [value]);
    else group.push(value);
  }
  return groups;
}

function convert(
  field: UrlField,
  name: string,
  texts: string[],
  violations: FieldViolation[],
): JsonValue[] | undefined {
  const values: JsonValue[] = [];
  for (const text of texts) {
    const result = jsonValueFromText(field.type, text);
    if ("rule" in result) {
      // Every request's `limit` follows the paging rule: name it rather than int32's bounds.
      const rule = field.jsonPath === "limit" ? PAGE_LIMIT_RULE : result.rule;
      violations.push({ field: name, description: rule });
      return undefined;
    }
    values.push(result.value);
  }
  return values;
}

/** Sets the field's member in the request JSON, creating the messages on its way. */
function put(message: JsonObject, field: UrlField, value: JsonValue): void {
  let target = message;
  const names = field.chain.map((f) => f.jsonName);
  for (const name of names.slice(0, -1)) {
    const next = target[name];
    if (typeof next !== "object" || next === null || Array.isArray(next)) target[name] = {};
    target = target[name] as JsonObject;
  }
  target[names[names.length - 1] as string] = value;
}

/** invalid_argument with a google.rpc.BadRequest detail, like the service's own validation errors. */
function invalidArgument(violations: FieldViolation[]): ConnectError {
  const detail = create(BadRequestSchema, { fieldViolations: violations });
  return new ConnectError(
    violations.map((v) => `${v.field} ${v.description}`).join(". "),
    Code.InvalidArgument,
    undefined,
    [{ desc: BadRequestSchema, value: detail }],
  );
}

/** Answers an error found before the call reached its handler, as Connect does: error JSON. */
function answerError(res: Parameters<RequestHandler>[1], reason: unknown, status?: number): void {
  const error =
    reason instanceof ConnectError
      ? reason
      : new ConnectError("internal error", Code.Internal, undefined, undefined, reason);
  const body = errorToJsonBytes(error, {});
  res.statusCode = status ?? codeToHttpStatus(error.code);
  res.setHeader("content-type", "application/json");
  res.setHeader("content-length", String(body.byteLength));
  res.end(body);
}
