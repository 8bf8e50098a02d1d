/**
 * The webhook SSRF check on addresses, directly: what a delivery may connect to, whether the
 * address came from a URL's host or from resolving a name.
 */
import { describe, expect, it } from "vitest";
import { addressRefusal, literalAddress } from "../src/webhooks/address-policy.ts";

/** An address as it reaches the check from a URL: WHATWG URL rewrites IPv6 literals to hex. */
const fromUrl = (url: string) => literalAddress(new URL(url).hostname) as string;

describe("addressRefusal", () => {
  it("refuses IPv4-compatible IPv6 addresses, however they are written", () => {
    expect(fromUrl("http://[::127.0.0.1]/")).toBe("::7f00:1");
    for (const address of [
      "::a9fe:a9fe",
      fromUrl("http://[::a9fe:a9fe]/"),
      fromUrl("http://[::127.0.0.1]/"),
      fromUrl("http://[::10.0.0.1]/"),
      // As a resolver (inet_ntop) writes them: dotted, which ipaddr.js alone reads as IPv4-mapped.
      "::8.8.8.8",
      "::169.254.169.254",
      "0:0:0:0:0:0:8.8.8.8",
      "0:0:0:0:0:0:ffff:ffff",
    ]) {
      expect(addressRefusal(address), address).toBe("ipv4Compatible");
    }
  });

  it("keeps :: and ::1 named for what they are, and public IPv6 addresses allowed", () => {
    expect(addressRefusal("::")).toBe("unspecified");
    expect(addressRefusal("::1")).toBe("loopback");
    expect(addressRefusal("::0.0.0.1")).toBe("loopback");
    // IPv4-mapped addresses are still judged as the IPv4 address they map.
    expect(addressRefusal("::ffff:8.8.8.8")).toBeUndefined();
    expect(addressRefusal("::ffff:169.254.169.254")).toBe("linkLocal");
    expect(addressRefusal("2606:4700:4700::1111")).toBeUndefined();
    // Just outside ::/96.
    expect(addressRefusal("::1:0:0")).toBeUndefined();
    expect(addressRefusal("93.184.215.14")).toBeUndefined();
  });
});
