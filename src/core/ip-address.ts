// IP addresses as the server reads them: canonical notations only, IPv4-mapped IPv6 read as IPv4,
// CIDR ranges, and which address is the client's behind trusted proxies (X-Forwarded-For is believed
// only from the proxies TRUST_PROXY names).
import ipaddr from "ipaddr.js";
import { textLength } from "./storable-text.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/** Contract: a CIDR range is at most 49 characters. */
export const MAX_CIDR_LENGTH = 49;
/** X-Forwarded-For hops looked at, from the right; a longer chain is cut (fail closed). */
export const MAX_FORWARDED_HOPS = 32;

/** The address as IPv4 when it is an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`), else as parsed. */
export function unmapped(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? address.toIPv4Address() : address;
}

/** Parses an address as Node reports it (a zone id such as `%eth0` is dropped); undefined if not an IP. */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  let bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  // Only the canonical notations: ipaddr.js would also take `0x7f.1` or `127.1` for IPv4.
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (!bare.includes(":")) return undefined;
  // IPv6 with a trailing dotted quad: ipaddr.js reads any `::a.b.c.d` as IPv4-mapped, even
  // `::127.0.0.1` (IPv4-compatible, ::7f00:1). Rewrite the quad as two hex groups first.
  const quad = /^(.*:)([0-9.]+)(%.*)?$/.exec(bare);
  if (quad?.[2]?.includes(".")) {
    if (!ipaddr.IPv4.isValidFourPartDecimal(quad[2])) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(quad[2]).octets;
    bare = `${quad[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}${quad[3] ?? ""}`;
  }
  return ipaddr.IPv6.isValid(bare) ? ipaddr.IPv6.parse(bare) : undefined;
}

/**
 * One CIDR range in canonical notation, or why it is not one. A prefix length is required (a single
 * address is /32 or /128), host bits must be zero, IPv4 must be dotted decimal, and an
 * IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) becomes its IPv4 range (`10.0.0.0/8`).
 */
export function parseCidr(text: string): { cidr: string } | { error: string } {
  if (textLength(text) > MAX_CIDR_LENGTH) return { error: `must be at most ${MAX_CIDR_LENGTH} characters` };
  const slash = text.indexOf("/");
  if (slash < 0) return { error: "must be a CIDR range with a prefix length, e.g. 203.0.113.0/24 (a single address is /32 or /128)" };
  const addressText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const address = parseAddress(addressText);
  if (!address || addressText.includes("%") || addressText.startsWith("[")) return { error: "must start with an IPv4 or IPv6 address" };
  const max = address instanceof ipaddr.IPv4 ? 32 : 128;
  if (!/^[0-9]{1,3}$/.test(prefixText) || Number(prefixText) > max) return { error: `must have a prefix length from 0 to ${max}` };
  let prefix = Number(prefixText);
  let ip: Address = address;
  if (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() && prefix >= 96) {
    ip = ip.toIPv4Address();
    prefix -= 96;
  }
  const network = ip instanceof ipaddr.IPv4 ? ipaddr.IPv4.networkAddressFromCIDR(`${ip.toString()}/${prefix}`) : ipaddr.IPv6.networkAddressFromCIDR(`${ip.toString()}/${prefix}`);
  if (network.toString() !== ip.toString()) return { error: `has host bits set; the range is ${network.toString()}/${prefix}` };
  return { cidr: `${ip.toString()}/${prefix}` };
}

/** Parses stored ranges; an entry that does not parse is dropped (it can then match nothing). */
export function ranges(cidrs: readonly string[]): Range[] {
  const out: Range[] = [];
  for (const text of cidrs) {
    const result = parseCidr(text);
    if ("cidr" in result) out.push(ipaddr.parseCIDR(result.cidr));
  }
  return out;
}

export function inRanges(address: Address, list: readonly Range[]): boolean {
  return list.some(([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix));
}

/** The peer as an IP (IPv4-mapped IPv6 as IPv4, zone id dropped), or undefined when it is not one. */
export function normalizeAddress(text: string | undefined): Address | undefined {
  if (text === undefined) return undefined;
  const parsed = parseAddress(text.trim());
  if (!parsed) return undefined;
  const ip = unmapped(parsed);
  return ip instanceof ipaddr.IPv6 && ip.zoneId ? ipaddr.IPv6.parse(ip.toString().replace(/%.*$/, "")) : ip;
}

/**
 * TRUST_PROXY: a comma-separated list of CIDR ranges (or single addresses) of the proxies whose
 * X-Forwarded-For is believed (or of another variable of that form, named `variable`). Unset or
 * empty: none. Throws an Error naming the bad entry.
 */
export function parseTrustProxy(raw: string | undefined, variable = "TRUST_PROXY"): string[] {
  if (raw === undefined || raw.trim() === "") return [];
  return raw.split(",").map((part, i) => {
    const text = part.trim();
    const single = normalizeAddress(text);
    const result = !text.includes("/") && single ? { cidr: `${single.toString()}/${single instanceof ipaddr.IPv4 ? 32 : 128}` } : parseCidr(text);
    if ("error" in result) throw new Error(`${variable} entry ${i + 1} ("${text}") ${result.error}`);
    return result.cidr;
  });
}

/** Whether an address (a socket's peer) is in `cidrs`, with the ranges parsed once; an empty list holds none. */
export function inAddressRanges(cidrs: readonly string[]): (address: string | undefined) => boolean {
  const list = ranges(cidrs);
  return (address) => {
    const ip = list.length > 0 ? normalizeAddress(address) : undefined;
    return ip !== undefined && inRanges(ip, list);
  };
}

/**
 * The client's address. Without trusted proxies, the socket's peer. With them, walks from the
 * socket peer leftwards through X-Forwarded-For while each hop is a trusted proxy, and returns the
 * first address that is not: a client cannot forge its way past a proxy that appends what it saw.
 * A malformed hop ends the walk at the last trusted proxy (it does not let the request in as
 * someone else). Addresses come back normalized (IPv4-mapped as IPv4).
 */
export function clientAddress(
  socketAddress: string | undefined,
  xForwardedFor: string | readonly string[] | undefined,
  trustProxy: readonly string[],
): string | undefined {
  const socket = normalizeAddress(socketAddress);
  if (!socket) return socketAddress;
  const trusted = ranges(trustProxy);
  if (trusted.length === 0 || xForwardedFor === undefined) return socket.toString();
  const header = typeof xForwardedFor === "string" ? xForwardedFor : xForwardedFor.join(",");
  const hops = header
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  let current = socket;
  for (let i = hops.length - 1, seen = 0; i >= 0 && seen < MAX_FORWARDED_HOPS; i--, seen++) {
    if (!inRanges(current, trusted)) return current.toString();
    const next = normalizeAddress(hops[i]);
    if (!next) return current.toString();
    current = next;
  }
  return current.toString();
}
