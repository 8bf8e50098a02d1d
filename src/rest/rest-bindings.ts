import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";
import { type UrlFieldType, urlFieldTypeOf } from "./field-value.ts";
import { type PathTemplate, parsePathTemplate } from "./path-template.ts";

/**
 * What a google.api.http rule says about one RPC, resolved against its request message: the HTTP
 * method and path, which fields the path binds, where the body goes, and which fields the query
 * may set. Both the REST handler (at startup) and the OpenAPI generator (at `buf generate` time)
 * read rules through this module, so what is documented is what is served.
 */

/**
 * The shape of google.api.HttpRule as protobuf-es gives it, whether from the generated code (the
 * server) or from a registry built from descriptors (the protoc plugin, which runs before gen/ exists).
 */
export interface HttpRuleLike {
  readonly pattern:
    | { readonly case: "get" | "put" | "post" | "delete" | "patch"; readonly value: string }
    | { readonly case: "custom"; readonly value: { readonly kind: string; readonly path: string } }
    | { readonly case: undefined; readonly value?: undefined };
  readonly body: string;
  readonly responseBody: string;
  readonly additionalBindings: readonly HttpRuleLike[];
}

/** A request field reachable from the URL, by its chain of fields from the request message. */
export interface UrlField {
  /** Field names joined with dots: JSON names (`pageToken`), and proto names (`page_token`). */
  readonly jsonPath: string;
  readonly protoPath: string;
  readonly chain: readonly DescField[];
  readonly type: UrlFieldType;
  readonly repeated: boolean;
}

export interface RestBinding {
  readonly method: DescMethod;
  /** "GET", "POST", ... (a custom rule's kind, upper-cased). */
  readonly httpMethod: string;
  readonly path: PathTemplate;
  /** The fields the path variables bind, in the template's order. */
  readonly pathFields: readonly UrlField[];
  /** The rule's `body`: "" (none), "*" (the whole request), or the field it fills. */
  readonly body:
    | { readonly kind: "none" }
    | { readonly kind: "all" }
    | { readonly kind: "field"; readonly field: DescField };
  /** Fields the query may set: every scalar-like field neither the path nor the body binds. */
  readonly queryFields: readonly UrlField[];
}

/** The bindings of `method`'s rule and its additional bindings. Throws on a rule it cannot serve. */
export function restBindingsOf(method: DescMethod, rule: HttpRuleLike): RestBinding[] {
  const where = `google.api.http of ${method.parent.typeName}.${method.name}`;
  // A server stream is served as Server-Sent Events, to a GET without a body.
  if (method.methodKind !== "unary" && method.methodKind !== "server_streaming")
    throw new Error(`${where}: only unary and server-streaming methods can be served over REST`);
  if (rule.responseBody !== "") throw new Error(`${where}: response_body is not supported`);
  const bindings = [bindingOf(method, rule, where)];
  for (const extra of rule.additionalBindings) {
    if (extra.additionalBindings.length > 0) throw new Error(`${where}: additional bindings may not nest`);
    bindings.push(bindingOf(method, extra, where));
  }
  return bindings;
}

function bindingOf(method: DescMethod, rule: HttpRuleLike, where: string): RestBinding {
  const { pattern } = rule;
  if (pattern.case === undefined) throw new Error(`${where}: no HTTP method and path`);
  const [httpMethod, template] =
    pattern.case === "custom"
      ? [pattern.value.kind.toUpperCase(), pattern.value.path]
      : [pattern.case.toUpperCase(), pattern.value];
  const path = parsePathTemplate(template);
  const pathFields = path.variables.map((v) => {
    const chain = chainOf(method.input, v.fieldPath, where);
    const field = urlFieldOf(chain);
    if (field === undefined || field.repeated)
      throw new Error(`${where}: path variable ${v.fieldPath.join(".")} must bind a single scalar field`);
    return field;
  });
  let body: RestBinding["body"] = { kind: "none" };
  if (rule.body === "*") body = { kind: "all" };
  else if (rule.body !== "") {
    const field = method.input.fields.find((f) => f.name === rule.body);
    if (field === undefined) throw new Error(`${where}: body names no field of ${method.input.typeName}`);
    body = { kind: "field", field };
  }
  if (method.methodKind === "server_streaming" && (httpMethod !== "GET" || body.kind !== "none"))
    throw new Error(`${where}: a server stream is served as Server-Sent Events, to a GET without a body`);
  const bound = new Set(pathFields.map((f) => f.protoPath));
  if (body.kind === "field") bound.add(body.field.name);
  const queryFields = body.kind === "all" ? [] : urlFieldsOf(method.input, [], bound);
  return { method, httpMethod, path, pathFields, body, queryFields };
}

function chainOf(message: DescMessage, names: readonly string[], where: string): DescField[] {
  const chain: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const name of names) {
    const field: DescField | undefined = current?.fields.find((f) => f.name === name);
    if (field === undefined) throw new Error(`${where}: ${message.typeName} has no field ${names.join(".")}`);
    chain.push(field);
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return chain;
}

function urlFieldOf(chain: readonly DescField[]): UrlField | undefined {
  const last = chain[chain.length - 1] as DescField;
  const type = urlFieldTypeOf(last);
  if (type === undefined) return undefined;
  return {
    jsonPath: chain.map((f) => f.jsonName).join("."),
    protoPath: chain.map((f) => f.name).join("."),
    chain,
    type,
    repeated: last.fieldKind === "list",
  };
}

/**
 * Fields settable from the query, nested messages flattened with dots (as grpc-gateway does).
 * Fields a URL cannot carry (maps, Struct, lists of messages) are left out; so is recursion.
 */
function urlFieldsOf(
  message: DescMessage,
  prefix: readonly DescField[],
  bound: ReadonlySet<string>,
): UrlField[] {
  const fields: UrlField[] = [];
  for (const field of message.fields) {
    const chain = [...prefix, field];
    const protoPath = chain.map((f) => f.name).join(".");
    if (bound.has(protoPath)) continue;
    const url = urlFieldOf(chain);
    if (url !== undefined) fields.push(url);
    else if (field.fieldKind === "message" && !isWellKnown(field.message) && !recurs(chain))
      fields.push(...urlFieldsOf(field.message, chain, bound));
  }
  return fields;
}

/** Well-known types have their own JSON forms: never flattened into their fields. */
function isWellKnown(message: DescMessage): boolean {
  return message.typeName.startsWith("google.protobuf.");
}

/** True when the chain's last message already occurs above it (a recursive message). */
function recurs(chain: readonly DescField[]): boolean {
  const last = chain[chain.length - 1]?.message;
  return chain.some((f) => f.parent === last);
}
