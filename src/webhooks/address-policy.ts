import ipaddr from "ipaddr.js";

/**
 * Whether a webhook may be sent to an IP address: only to public unicast ones, unless private
 * networks are allowed. ipaddr.js names every special range; anything but "unicast" is refused:
 * private (10/8, 172.16/12, 192.168/16), loopback, link-local (169.254/16, which holds the cloud
 * metadata address 169.254.169.254, and fe80::/10), unique-local (fc00::/7, which holds AWS's
 * fd00:ec2::254), carrier-grade NAT (100.64/10, which holds Alibaba's 100.100.100.200),
 * multicast, unspecified, broadcast, reserved, and the IPv6 forms that embed an IPv4 address
 * (6to4, Teredo, NAT64). IPv4-mapped IPv6 addresses are judged as the IPv4 address they map.
 * IPv4-compatible ones (::/96 but :: and ::1) are refused as "ipv4Compatible".
 */
export function addressRefusal(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return "not an IP address";
  const parsed = ipaddr.process(hexForm(address));
  const range = parsed.range();
  if (range !== "unicast") return range;
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).match(IPV4_COMPATIBLE)) return "ipv4Compatible";
  return undefined;
}

/**
 * IPv4-compatible IPv6 addresses (RFC 4291, deprecated): ipaddr.js has no name for them, so they
 * read as unicast, yet stacks that still route them reach the IPv4 address in their last 32
 * bits: [::a9fe:a9fe] is the metadata address 169.254.169.254, and a URL's [::127.0.0.1] is
 * written [::7f00:1]. :: and ::1 are in the range too, and named above (unspecified, loopback).
 */
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR("::/96");

/** "::a.b.c.d" (with a zone or not): the dotted form of an IPv4-compatible address. */
const DOTTED_COMPATIBLE = /^::(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:%[0-9a-z]+)?$/i;

/**
 * An address with "::a.b.c.d" written "::xxxx:xxxx": ipaddr.js reads the dotted form as the
 * IPv4-mapped ::ffff:a.b.c.d and judges the IPv4 address alone, and resolvers (inet_ntop) write
 * IPv4-compatible addresses dotted, so "::8.8.8.8" would pass as a public address.
 */
function hexForm(address: string): string {
  const match = DOTTED_COMPATIBLE.exec(address);
  if (match === null) return address;
  const [a, b, c, d] = match.slice(1, 5).map(Number) as [number, number, number, number];
  if (a > 255 || b > 255 || c > 255 || d > 255) return address;
  return `::${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** The IP address a URL host names literally (IPv6 without its brackets), or undefined for a name. */
export function literalAddress(hostname: string): string | undefined {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(":") || ipaddr.IPv4.isValidFourPartDecimal(bare))
    ? bare
    : undefined;
}
