// Source address restriction of a webhook listener: the allowed CIDR ranges (checked when the
// trigger is saved) and whether a peer is inside them (src/core/ip-address.ts reads the addresses).
import { invalidField } from "../core/errors.js";
import { inRanges, normalizeAddress, parseCidr, ranges } from "../core/ip-address.js";

/** Contract: at most 50 ranges. */
export const MAX_CIDRS = 50;

/**
 * Save-time validation of a listener's allowed source ranges: 400 for the first bad entry, naming
 * its index (`{path}[i]`). Returns the ranges in canonical notation.
 */
export function parseCidrs(list: readonly unknown[], path = "allowedSourceCidrs"): string[] {
  if (list.length > MAX_CIDRS) throw invalidField(path, `must hold at most ${MAX_CIDRS} ranges`, "INVALID_CIDR");
  return list.map((entry, i) => {
    if (typeof entry !== "string") throw invalidField(`${path}[${i}]`, "must be a CIDR range string", "INVALID_CIDR");
    const result = parseCidr(entry);
    if ("error" in result) throw invalidField(`${path}[${i}]`, result.error, "INVALID_CIDR");
    return result.cidr;
  });
}

/**
 * Whether `peerAddress` may post to a listener restricted to `cidrs`. An empty list allows any
 * source; with ranges, an unknown or unparseable peer is refused. IPv4-mapped IPv6 peers
 * (`::ffff:127.0.0.1`) are matched against IPv4 ranges.
 */
export function isAllowed(cidrs: readonly string[], peerAddress: string | undefined): boolean {
  if (cidrs.length === 0) return true;
  const peer = normalizeAddress(peerAddress);
  if (!peer) return false;
  return inRanges(peer, ranges(cidrs));
}
