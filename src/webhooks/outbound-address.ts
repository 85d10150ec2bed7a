// Which addresses the server may connect to when it calls out to a URL an administrator typed (the
// JWKS of a JWT listener). An allowlist, not a blocklist: only global unicast addresses pass, so a
// range nobody thought of is refused rather than reached.
import ipaddr from "ipaddr.js";
import { parseAddress, unmapped } from "../core/ip-address.js";

export interface OutboundAddressPolicy {
  /** Also allow loopback and private addresses (RFC 1918, fc00::/7): development and tests only. */
  allowInsecure?: boolean;
  /**
   * These exact addresses are allowed whatever their range. Set in code only (no configuration
   * reaches it): tests let one local server stand in for a public JWKS host while every other
   * local address stays refused.
   */
  exemptAddresses?: readonly string[];
}

// Cloud metadata and platform endpoints, refused even with allowInsecure. Most are already outside
// global unicast (169.254/16, 100.64/10, 192.0.0/24); the Azure wire server is a public address and
// the IPv6 ones are unique-local, which allowInsecure would otherwise let through.
const METADATA_ADDRESSES: ReadonlySet<string> = new Set(
  [
    "169.254.169.254", // AWS, GCP, Azure, OpenStack, DigitalOcean...
    "169.254.169.253", // AWS DNS
    "169.254.170.2", // AWS ECS task metadata
    "169.254.170.23", // AWS EKS pod identity
    "100.100.100.200", // Alibaba Cloud
    "192.0.0.192", // Oracle Cloud
    "168.63.129.16", // Azure wire server
    "fd00:ec2::254", // AWS IMDS over IPv6
    "fd00:ec2::23", // AWS EKS pod identity over IPv6
    "fd20:ce::254", // GCP metadata over IPv6
  ].map((a) => ipaddr.parse(a).toNormalizedString()),
);

const INSECURE_V4 = new Set(["loopback", "private"]);
const INSECURE_V6 = new Set(["loopback", "uniqueLocal"]);
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

function sameAddress(text: string, ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const other = parseAddress(text);
  return other !== undefined && unmapped(other).toNormalizedString() === ip.toNormalizedString();
}

/** Whether the server may open a connection to `address` (an IP literal). */
export function isOutboundAddressAllowed(address: string, policy: OutboundAddressPolicy = {}): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  const ip = unmapped(parsed);
  if (policy.exemptAddresses?.some((a) => sameAddress(a, ip))) return true;
  if (METADATA_ADDRESSES.has(ip.toNormalizedString())) return false;
  const range = ip.range();
  if (ip instanceof ipaddr.IPv4) {
    if (range === "unicast") return true;
    return policy.allowInsecure === true && INSECURE_V4.has(range);
  }
  if (range === "unicast" && ip.match(GLOBAL_UNICAST_V6)) return true;
  return policy.allowInsecure === true && INSECURE_V6.has(range);
}
