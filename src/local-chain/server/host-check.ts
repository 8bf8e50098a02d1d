/** The names the local chain's port always answers to: it listens on the loopback interface only. */
const LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

/**
 * Whether a request's Host header names this machine, as development servers check it against DNS
 * rebinding: a web page on evil.example can point its own name at 127.0.0.1 and then call the
 * port from the victim's browser as same-origin, but its requests still say `Host: evil.example`.
 * The port serves a faucet and cheatcodes, so only loopback names, the host it is bound to and
 * the names configured (LOCAL_SOLANA_ALLOWED_HOSTS) are answered; a request without a Host header
 * (HTTP/1.0 from a script) is refused too, as no browser sends one.
 */
export function createHostCheck(options: {
  /** The address the port is bound to (its URL's host). */
  readonly boundHost: string;
  /** More host names, lower case, without ports. */
  readonly allowedHosts?: readonly string[];
}): (host: string | undefined) => boolean {
  const allowed = new Set([...LOOPBACK_HOSTS, options.boundHost, ...(options.allowedHosts ?? [])]);
  return (host) => host !== undefined && allowed.has(hostName(host.trim().toLowerCase()));
}

/** The name of a Host header value, without its port: `[::1]:8899` is `[::1]`, `localhost:8899` `localhost`. */
function hostName(host: string): string {
  if (host.startsWith("[")) {
    const end = host.indexOf("]");
    return end === -1 ? host : host.slice(0, end + 1);
  }
  const colon = host.lastIndexOf(":");
  return colon === -1 ? host : host.slice(0, colon);
}
