/**
 * The response headers and trailers of a call on the lean path: a `Headers` that behaves as the
 * platform's (undici's) does for everything interceptors and handlers do with it, at a fraction of
 * the cost.
 *
 * A call makes two (headers and trailers) and most hold one to three fields. undici's Headers
 * keeps a Map of entries and builds a sorted copy of them whenever it is iterated; on the lean
 * path those objects were a tenth of all the garbage a call made. Here the fields sit in two
 * short arrays. What callers can observe is the same: names are case-insensitive and iterate in
 * sorted order, lower-cased; values of one name are joined with ", " except `set-cookie`, whose
 * values stay apart; values are trimmed of leading and trailing whitespace. Anything outside
 * plain printable ASCII is checked and normalised by a real Headers, so invalid names and values
 * throw exactly the TypeError the platform throws.
 */
export function createAnswerHeaders(): Headers {
  return new AnswerHeaders();
}

/** A header name as most code writes it: a token of letters, digits and dashes. */
const PLAIN_NAME = /^[A-Za-z0-9-]+$/;
/** A value of printable ASCII with no whitespace to trim at either end. */
const PLAIN_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;
const SET_COOKIE = "set-cookie";

class AnswerHeaders implements Headers {
  /** Lower-cased names and their values, in the order they were added. */
  readonly #names: string[] = [];
  readonly #values: string[] = [];

  get(name: string): string | null {
    const key = checkedName(name, "get");
    if (key === SET_COOKIE) {
      const cookies = this.getSetCookie();
      return cookies.length === 0 ? null : cookies.join(", ");
    }
    const i = this.#names.indexOf(key);
    return i < 0 ? null : (this.#values[i] as string);
  }

  has(name: string): boolean {
    return this.#names.includes(checkedName(name, "has"));
  }

  getSetCookie(): string[] {
    const cookies: string[] = [];
    for (let i = 0; i < this.#names.length; i++) {
      if (this.#names[i] === SET_COOKIE) cookies.push(this.#values[i] as string);
    }
    return cookies;
  }

  set(name: string, value: string): void {
    const [key, normalized] = checked(name, value, "set");
    this.#remove(key);
    this.#names.push(key);
    this.#values.push(normalized);
  }

  append(name: string, value: string): void {
    const [key, normalized] = checked(name, value, "append");
    const i = key === SET_COOKIE ? -1 : this.#names.indexOf(key);
    if (i < 0) {
      this.#names.push(key);
      this.#values.push(normalized);
    } else {
      this.#values[i] = `${this.#values[i]}, ${normalized}`;
    }
  }

  delete(name: string): void {
    this.#remove(checkedName(name, "delete"));
  }

  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [key, value] of this.#sorted()) callback.call(thisArg, value, key, this);
  }

  entries(): ReturnType<Headers["entries"]> {
    return this.#sorted()[Symbol.iterator]() as ReturnType<Headers["entries"]>;
  }

  keys(): ReturnType<Headers["keys"]> {
    return this.#sorted()
      .map(([key]) => key)
      [Symbol.iterator]() as ReturnType<Headers["keys"]>;
  }

  values(): ReturnType<Headers["values"]> {
    return this.#sorted()
      .map(([, value]) => value)
      [Symbol.iterator]() as ReturnType<Headers["values"]>;
  }

  [Symbol.iterator](): ReturnType<Headers["entries"]> {
    return this.entries();
  }

  /** The fields sorted by name, as undici iterates them (set-cookie values in their order). */
  #sorted(): [string, string][] {
    const fields: [string, string][] = [];
    for (let i = 0; i < this.#names.length; i++) {
      fields.push([this.#names[i] as string, this.#values[i] as string]);
    }
    // Array.prototype.sort is stable: set-cookie values keep the order they were added in.
    if (fields.length > 1) fields.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return fields;
  }

  #remove(key: string): void {
    for (let i = this.#names.length - 1; i >= 0; i--) {
      if (this.#names[i] === key) {
        this.#names.splice(i, 1);
        this.#values.splice(i, 1);
      }
    }
  }
}

/** The lower-cased name; throws the platform's TypeError for a name it refuses. */
function checkedName(name: string, method: "get" | "has" | "delete"): string {
  if (!PLAIN_NAME.test(name)) new Headers()[method](name);
  return name.toLowerCase();
}

/** The lower-cased name and normalised value, or the platform's TypeError. */
function checked(name: string, value: string, method: "set" | "append"): [string, string] {
  const text = String(value);
  if (PLAIN_NAME.test(name) && PLAIN_VALUE.test(text)) return [name.toLowerCase(), text];
  const probe = new Headers();
  probe[method](name, text);
  return [name.toLowerCase(), probe.get(name) as string];
}
