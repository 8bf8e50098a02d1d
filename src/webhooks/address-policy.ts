import ipaddr from "ipaddr.js";

/**
 * Whether a webhook may be sent to an IP address: only to public unicast ones, unless private
 * networks are allowed. ipaddr.js names every special range; anything but "unicast" is refused:
 * private (10/8, 172.16/12, 192.168/16), loopback, link-local (169.254/16, which holds the cloud
 * metadata address 169.254.169.254, and fe80::/10), unique-local (fc00::/7, which holds AWS's
 * fd00:ec2::254), carrier-grade NAT (100.64/10, which holds Alibaba's 100.100.100.200),
 * multicast, unspecified, broadcast, reserved, and the IPv6 forms that embed an IPv4 address
 * (6to4, Teredo, NAT64). IPv4-mapped IPv6 addresses are judged as the IPv4 address they map.
 */
export function addressRefusal(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "not an IP address";
  const range = ipaddr.process(address).range();
  return range === "unicast" ? undefined : range;
}

/** The IP address a URL host names literally (IPv6 without its brackets), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(":") || ipaddr.IPv4.isValidFourPartDecimal(bare))
    ? bare
    : undefined;
}
