import type { IncomingHttpHeaders } from "node:http";

/**
 * A `Headers` over Node's parsed request headers, for interceptors and handlers on the lean path.
 * Reading (`get`, `has`) looks the name up in Node's object; building a real `Headers` (a copy of
 * every header, validated) costs more than most calls ever need, so it is made only when a
 * caller iterates or changes the headers. HTTP/2 pseudo-headers (`:path`, ...) are not headers
 * and are left out, as connect-node leaves them out.
 */
export function createRequestHeaders(raw: IncomingHttpHeaders): Headers {
  return new RequestHeaders(raw);
}

class RequestHeaders implements Headers {
  readonly #raw: IncomingHttpHeaders;
  #copy: Headers | undefined;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    if (this.#copy !== undefined) return this.#copy.get(name);
    const key = name.toLowerCase();
    if (key.startsWith(":")) return null;
    const value = this.#raw[key];
    if (value === undefined) return null;
    return typeof value === "string" ? value : value.join(", ");
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  getSetCookie(): string[] {
    return this.#headers().getSetCookie();
  }

  set(name: string, value: string): void {
    this.#headers().set(name, value);
  }

  append(name: string, value: string): void {
    this.#headers().append(name, value);
  }

  delete(name: string): void {
    this.#headers().delete(name);
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    this.#headers().forEach((value, key) => {
      callback.call(thisArg, value, key, this);
    });
  }

  entries(): ReturnType<Headers["entries"]> {
    return this.#headers().entries();
  }

  keys(): ReturnType<Headers["keys"]> {
    return this.#headers().keys();
  }

  values(): ReturnType<Headers["values"]> {
    return this.#headers().values();
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.#headers()[Symbol.iterator]();
  }

  #headers(): Headers {
    if (this.#copy === undefined) {
      const copy = new Headers();
      for (const [key, value] of Object.entries(this.#raw)) {
        if (value === undefined || key.startsWith(":")) continue;
        if (typeof value === "string") copy.append(key, value);
        else for (const item of value) copy.append(key, item);
      }
      this.#copy = copy;
    }
    return this.#copy;
  }
}
