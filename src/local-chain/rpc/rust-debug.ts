export interface RustDebugOptions {
  /** Arrays and objects nested deeper than this print as "…". */
  readonly maxDepth: number;
  /** Characters written at most; a longer text is cut and ends with "…". */
  readonly maxLength: number;
}

/**
 * A JSON value as Rust's Debug writes serde_json's Value (`Array([Number(1), String("a")])`), as
 * jsonrpc-core puts a refused request's params in an error's `data`. The value is the caller's, so
 * the printer is bounded in both directions: a 5,000-deep array must neither exhaust the stack
 * (a RangeError here once took the whole process down) nor a megabyte of params come back as a
 * megabyte of `data`. Past either bound the text says "…", as no Rust value would.
 */
export function rustDebug(value: unknown, options: RustDebugOptions): string {
  const { maxDepth, maxLength } = options;
  let out = "";
  let full = false;
  const write = (text: string) => {
    if (full) return;
    const room = maxLength - out.length;
    if (text.length > room) {
      out += text.slice(0, room);
      full = true;
    } else {
      out += text;
    }
  };
  // Only the part that can still be written is ever turned into text.
  const quoted = (text: string) => JSON.stringify(text.length > maxLength ? text.slice(0, maxLength) : text);
  const hugeInteger = 10n ** BigInt(maxLength);

  /** A scalar's text, or undefined for an array or object. */
  const scalar = (item: unknown): string | undefined => {
    if (item === null || item === undefined) return "Null";
    if (typeof item === "boolean") return `Bool(${item})`;
    if (typeof item === "number") return `Number(${item})`;
    // A bigint's digits cost time to write; one longer than the whole text is not written at all.
    if (typeof item === "bigint") {
      return item >= hugeInteger || item <= -hugeInteger ? "Number(…)" : `Number(${item})`;
    }
    if (typeof item === "string") return `String(${quoted(item)})`;
    return undefined;
  };

  const print = (item: unknown, depth: number): void => {
    if (full) return;
    const text = scalar(item);
    if (text !== undefined) {
      write(text);
    } else if (depth >= maxDepth) {
      write("…");
    } else if (Array.isArray(item)) {
      write("Array([");
      for (let i = 0; i < item.length && !full; i++) {
        if (i > 0) write(", ");
        print(item[i], depth + 1);
      }
      write("])");
    } else {
      write("Object({");
      let first = true;
      for (const key in item as Record<string, unknown>) {
        if (full) break;
        if (!Object.hasOwn(item as object, key)) continue;
        if (!first) write(", ");
        first = false;
        write(`${quoted(key)}: `);
        print((item as Record<string, unknown>)[key], depth + 1);
      }
      write("})");
    }
  };

  print(value, 0);
  return full ? `${out}…` : out;
}
