/**
 * The response headers and trailers of a call on the lean path: a `Headers` as the Fetch standard
 * defines it (names checked and lower-cased, values trimmed and checked, values of one name
 * combined with ", ", Set-Cookie kept apart, iteration sorted by name), over two small arrays.
 *
 * undici's `Headers` holds a Map and sorts a fresh copy of its entries on every walk; a unary call
 * makes two, sets a few names and walks them twice, which came to about a twentieth of what a
 * gRPC call allocates. A call's answer holds two or three headers, for which a linear search is
 * the cheaper structure.
 */
export function createResponseHeaders(): Headers {
  return new ResponseHeaders();
}

/** RFC 9110's token: the characters a field name may hold. */
const NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a field value may not hold once trimmed (and what is not a ByteString). */
const BAD_VALUE = /[\0\r\n]|[^\0-\xff]/;
/** HTTP whitespace, trimmed from both ends of a value. */
const EDGE_SPACE = /^[\t\n\r ]+|[\t\n\r ]+$/g;

class ResponseHeaders implements Headers {
  /** Lower-cased names, each once, in the order first set (Set-Cookie is kept in #cookies). */
  readonly #names: string[] = [];
  /** The combined value of each name in #names. */
  readonly #values: string[] = [];
  #cookies: string[] | undefined;

  append(name: string, value: string): void {
    this.#put(name, value, true);
  }

  set(name: string, value: string): void {
    this.#put(name, value, false);
  }

  delete(name: string): void {
    const key = normalName(name);
    if (key === "set-cookie") {
      this.#cookies = undefined;
      return;
    }
    const at = this.#names.indexOf(key);
    if (at < 0) return;
    this.#names.splice(at, 1);
    this.#values.splice(at, 1);
  }

  get(name: string): string | null {
    const key = normalName(name);
    if (key === "set-cookie") return this.#cookies === undefined ? null : this.#cookies.join(", ");
    const at = this.#names.indexOf(key);
    return at < 0 ? null : (this.#values[at] as string);
  }

  has(name: string): boolean {
    const key = normalName(name);
    if (key === "set-cookie") return this.#cookies !== undefined;
    return this.#names.includes(key);
  }

  getSetCookie(): string[] {
    return this.#cookies === undefined ? [] : [...this.#cookies];
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    if (this.#names.length <= 1 && this.#cookies === undefined) {
      // The common case, without the sorted copy.
      if (this.#names.length === 1)
        callback.call(thisArg, this.#values[0] as string, this.#names[0] as string, this);
      return;
    }
    for (const [key, value] of this.#sorted()) callback.call(thisArg, value, key, this);
  }

  entries(): ReturnType<Headers["entries"]> {
    return this.#sorted()[Symbol.iterator]() as unknown as ReturnType<Headers["entries"]>;
  }

  keys(): ReturnType<Headers["keys"]> {
    return this.#sorted()
      .map(([key]) => key)
      [Symbol.iterator]() as unknown as ReturnType<Headers["keys"]>;
  }

  values(): ReturnType<Headers["values"]> {
    return this.#sorted()
      .map(([, value]) => value)
      [Symbol.iterator]() as unknown as ReturnType<Headers["values"]>;
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return "Headers";
  }

  /** Sets or (`combine`) appends a value; Set-Cookie values are kept apart, each on its own. */
  #put(name: string, value: string, combine: boolean): void {
    const key = normalName(name);
    const normal = normalValue(value);
    if (key === "set-cookie") {
      if (this.#cookies === undefined || !combine) this.#cookies = [];
      this.#cookies.push(normal);
      return;
    }
    const at = this.#names.indexOf(key);
    if (at < 0) {
      this.#names.push(key);
      this.#values.push(normal);
    } else {
      this.#values[at] = combine ? `${this.#values[at]}, ${normal}` : normal;
    }
  }

  /** The entries in the standard's order: by name, each Set-Cookie on its own, in its place. */
  #sorted(): [string, string][] {
    const pairs: [string, string][] = this.#names.map((key, i) => [key, this.#values[i] as string]);
    for (const cookie of this.#cookies ?? []) pairs.push(["set-cookie", cookie]);
    // Stable: the Set-Cookie entries keep their order among themselves.
    return pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
}

function normalName(name: string): string {
  const text = String(name);
  if (!NAME.test(text)) throw new TypeError(`Headers: invalid header name "${text.slice(0, 64)}"`);
  return text.toLowerCase();
}

function normalValue(value: string): string {
  let text = String(value);
  const first = text.charCodeAt(0);
  const last = text.charCodeAt(text.length - 1);
  if (first <= 0x20 || last <= 0x20) text = text.replace(EDGE_SPACE, "");
  if (BAD_VALUE.test(text)) throw new TypeError(`Headers: invalid header value`);
  return text;
}
