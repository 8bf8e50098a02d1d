/**
 * A response's body as text, refusing one past `limit` bytes as soon as it is known to be: from
 * its Content-Length before reading, else while reading, so a huge or endless answer costs at
 * most `limit` bytes of memory. `tooLarge` makes the error thrown (each upstream names itself).
 */
export async function readBounded(response: Response, limit: number, tooLarge: () => Error): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > limit) {
    void response.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const body = response.body;
  if (body === null) return "";
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}
