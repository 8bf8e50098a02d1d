/**
 * The database named in the URI's path (`mongodb://host/<db>?...`), if any. The driver itself falls
 * back to "test", which is why this does not ask `client.db()`. Userinfo cannot hold an unescaped
 * "/", so the first "/" after the scheme starts the path.
 */
export function databaseInUri(uri: string): string | undefined {
  const rest = uri.replace(/^mongodb(\+srv)?:\/\//i, "");
  const slash = rest.indexOf("/");
  if (slash < 0) return undefined;
  const path = rest.slice(slash + 1).split("?")[0] ?? "";
  return path === "" ? undefined : decodeURIComponent(path);
}
