import { InvalidArgumentError } from "../domain/errors.ts";
import { addressRefusal, literalAddress } from "./address-policy.ts";

export interface WebhookUrlRules {
  /** http:// is accepted too. */
  readonly allowHttp: boolean;
  /** Literal private, loopback and link-local addresses are accepted. */
  readonly allowPrivateNetworks: boolean;
}

/** As browsers and most proxies bound URLs. */
export const MAX_URL_LENGTH = 2048;

/**
 * Checks an endpoint URL at registration: https (or http when allowed), no credentials (they
 * would travel in every listing and log), and no literal address in a refused range. Host names
 * are checked where it matters, at every delivery, against the addresses they resolve to then.
 * `onRefused` hears of URLs refused for where they point, as SSRF attempts.
 */
export function checkWebhookUrl(
  text: string,
  rules: WebhookUrlRules,
  onRefused?: (reason: string) => void,
): URL {
  const invalid = (rule: string) => InvalidArgumentError.field("url", rule);
  if (text === "") throw invalid("is required");
  if (text.length > MAX_URL_LENGTH) throw invalid(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid("must be an absolute URL");
  }
  if (url.protocol !== "https:" && !(rules.allowHttp && url.protocol === "http:")) {
    if (rules.allowHttp) throw invalid("must be an https or http URL");
    throw invalid(
      url.protocol === "http:"
        ? "must be an https URL (the server accepts http when WEBHOOK_ALLOW_HTTP is true)"
        : "must be an https URL",
    );
  }
  if (url.username !== "" || url.password !== "") throw invalid("must not carry credentials");
  if (rules.allowPrivateNetworks) return url;
  const address = literalAddress(url.hostname);
  // "localhost" and its subdomains are loopback by definition (RFC 6761), whatever a resolver
  // says: every delivery to them would be refused, so they are refused here, as 127.0.0.1 is.
  const refusal =
    address !== undefined ? addressRefusal(address) : isLocalhost(url.hostname) ? "loopback" : undefined;
  if (refusal !== undefined) {
    onRefused?.(refusal);
    throw invalid(
      `must not point to a private, loopback, link-local, multicast or metadata address (it names a ${refusal} address, which the server allows when WEBHOOK_ALLOW_PRIVATE_NETWORKS is true)`,
    );
  }
  return url;
}

function isLocalhost(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}
