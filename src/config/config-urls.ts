/** Rules for the URLs, hosts and origins the configuration names, and their forms for logs. */

/** A host name as a Host header carries it, without its port: letters, digits, dots and dashes. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

export function parseHosts(text: string, problems: string[]): string[] {
  if (text === "") return [];
  const hosts = text.split(",").map((h) => h.trim().toLowerCase());
  for (const host of hosts) {
    if (!HOST_NAME.test(host)) {
      problems.push(
        `LOCAL_SOLANA_ALLOWED_HOSTS must be a comma-separated list of host names without ports, like devbox.local (got "${host.slice(0, 64)}")`,
      );
    }
  }
  return hosts;
}

/** LOCAL_SOLANA_ALLOWED_ORIGINS: origins, never "*" (any page could then use the faucet and cheatcodes). */
export function parseChainOrigins(text: string, problems: string[]): string[] {
  if (text === "") return [];
  const origins = text.split(",").map((o) => o.trim().replace(/\/$/, ""));
  for (const origin of origins) {
    if (!/^https?:\/\/[^/\s*]+$/.test(origin)) {
      problems.push(
        `LOCAL_SOLANA_ALLOWED_ORIGINS must be a comma-separated list of origins like https://app.example.com, never "*" (got "${origin.slice(0, 64)}")`,
      );
    }
  }
  return origins;
}

export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

export function isWsUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === "ws:" || url.protocol === "wss:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/**
 * A Solana RPC URL as logs may show it: scheme, host and port only. Providers carry their key in
 * the path (Triton), the query (Helius) or the user info, so nothing else is shown.
 */
export function redactRpcUrl(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "(invalid URL)";
  }
}

export function parseOrigins(text: string, problems: string[]): string[] {
  if (text === "") return [];
  const origins = text.split(",").map((o) => o.trim().replace(/\/$/, ""));
  for (const origin of origins) {
    if (origin !== "*" && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      problems.push(
        `CORS_ORIGINS must be "*" or a comma-separated list of origins like https://app.example.com (got "${origin}")`,
      );
    }
  }
  return origins;
}

/** The MongoDB URI with any password replaced, for logs. */
export function redactUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/[^:/@]*):[^@/]*@/, "$1:****@");
}
