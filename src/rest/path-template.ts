/**
 * Path templates of google.api.http rules (google/api/http.proto), for example
 * `/v1/agents/{agent_id}` or `/v1/{name=shelves/*}/books/{book_id}:publish`:
 *
 *     Template = "/" Segments [ ":" Verb ] ;   Segment = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;   FieldPath = IDENT { "." IDENT } ;
 *
 * Parsed once at startup; matching a request path is a walk over its segments.
 */

type Part =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "any" } // "*": exactly one segment
  | { readonly kind: "rest" }; // "**": the remaining segments, at least none

interface Variable {
  /** The request field the variable binds, by proto field names: ["agent_id"]. */
  readonly fieldPath: readonly string[];
  /** Index of its first part, and one past its last. */
  readonly start: number;
  readonly end: number;
}

export interface PathTemplate {
  /** The template as written in the rule. */
  readonly source: string;
  readonly variables: readonly Pick<Variable, "fieldPath">[];
  /**
   * The template as an OpenAPI path: `/v1/agents/{agent_id}`. A variable spanning several
   * segments (`{name=shelves/*}`) becomes one `{name}` parameter whose value holds slashes.
   */
  readonly openApiPath: string;
  /**
   * The field values a request path binds (dotted field path to value), or undefined when the
   * path does not match. `path` is the raw (still percent-encoded) path, without the query.
   */
  match(path: string): Map<string, string> | undefined;
}

/** Parses `source`; throws an Error naming the template when it is malformed. */
export function parsePathTemplate(source: string): PathTemplate {
  const fail = (why: string): never => {
    throw new Error(`path template "${source}" ${why}`);
  };
  if (!source.startsWith("/")) fail("must start with a slash");
  let body = source.slice(1);
  let verb: string | undefined;
  const lastSlash = body.lastIndexOf("/");
  const colon = body.indexOf(":", Math.max(lastSlash, body.lastIndexOf("}")));
  if (colon >= 0) {
    verb = body.slice(colon + 1);
    body = body.slice(0, colon);
    if (verb === "") fail("has an empty verb");
  }
  const parts: Part[] = [];
  const variables: Variable[] = [];
  const openApi: string[] = [];
  for (const token of splitOutsideBraces(body, fail)) {
    if (token.startsWith("{")) {
      if (!token.endsWith("}")) fail(`has an unclosed variable ${token}`);
      const inner = token.slice(1, -1);
      const eq = inner.indexOf("=");
      const path = eq < 0 ? inner : inner.slice(0, eq);
      const fieldPath = path.split(".");
      if (fieldPath.some((name) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)))
        fail(`binds an odd field ${path}`);
      const start = parts.length;
      const segments = eq < 0 ? ["*"] : inner.slice(eq + 1).split("/");
      for (const segment of segments) parts.push(partOf(segment, fail));
      variables.push({ fieldPath, start, end: parts.length });
      openApi.push(`{${path}}`);
    } else {
      parts.push(partOf(token, fail));
      openApi.push(token);
    }
  }
  const restAt = parts.findIndex((p) => p.kind === "rest");
  if (restAt >= 0 && restAt !== parts.length - 1) fail("has ** before its last segment");
  const suffix = verb === undefined ? "" : `:${verb}`;

  return {
    source,
    variables: variables.map((v) => ({ fieldPath: v.fieldPath })),
    openApiPath: `/${openApi.join("/")}${suffix}`,
    match(path) {
      if (!path.startsWith("/")) return undefined;
      let rest = path.slice(1);
      if (verb !== undefined) {
        if (!rest.endsWith(suffix)) return undefined;
        rest = rest.slice(0, -suffix.length);
      }
      const segments = rest.split("/");
      const open = restAt >= 0;
      if (open ? segments.length < parts.length - 1 : segments.length !== parts.length) return undefined;
      const decoded: string[] = [];
      for (const [i, segment] of segments.entries()) {
        const value = decode(segment);
        if (value === undefined) return undefined;
        const part = parts[Math.min(i, parts.length - 1)] as Part;
        if (part.kind === "literal" && part.value !== value) return undefined;
        if (part.kind === "any" && value === "") return undefined;
        decoded.push(value);
      }
      const values = new Map<string, string>();
      for (const v of variables) {
        const end = v.end === parts.length ? segments.length : v.end;
        values.set(v.fieldPath.join("."), decoded.slice(v.start, end).join("/"));
      }
      return values;
    },
  };
}

function partOf(segment: string, fail: (why: string) => never): Part {
  if (segment === "*") return { kind: "any" };
  if (segment === "**") return { kind: "rest" };
  if (segment === "" || /[{}*]/.test(segment)) fail(`has an odd segment "${segment}"`);
  return { kind: "literal", value: segment };
}

/** Splits on slashes that are not inside a variable's braces. */
function splitOutsideBraces(body: string, fail: (why: string) => never): string[] {
  const tokens: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (c === "/" && depth === 0) {
      tokens.push(body.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) fail("has unbalanced braces");
  }
  if (depth !== 0) fail("has unbalanced braces");
  tokens.push(body.slice(start));
  return tokens;
}

function decode(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined; // malformed percent-encoding matches nothing
  }
}
