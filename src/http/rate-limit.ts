// The rate limits of the API: per source address on every operation, per credential on the operations
// that take an access token, per listener on the webhook intake (deliveries that authenticated; failed
// ones per listener and address, under a smaller budget). Each is checked as soon as its key is known
// and before the work it guards. Answers carry the IETF RateLimit fields; a refusal is 429 with
// Retry-After. Why: docs/operating.md, "Rate limits".
import type { Request, Response } from "express";
import ipaddr from "ipaddr.js";
import type { Clock } from "../core/clock.js";
import { ApiError, GrpcCode, type ErrorReason } from "../core/errors.js";
import { RateLimiter, type RateDecision, type RateLimitQuotas, type RatePolicyName, type RateQuota } from "../core/rate-limiter.js";
import type { IntakeLimits } from "../webhooks/intake.js";
import { clientAddress, normalizeAddress } from "../core/ip-address.js";

const REFUSALS: Record<RatePolicyName, { reason: ErrorReason; message: string }> = {
  source: { reason: "RATE_LIMITED", message: "too many requests from this source address; retry after the seconds in Retry-After" },
  credential: { reason: "RATE_LIMITED", message: "too many requests with this credential; retry after the seconds in Retry-After" },
  listener: { reason: "RATE_LIMITED", message: "too many deliveries to this listener; retry after the seconds in Retry-After" },
  "listener-failures": {
    reason: "TOO_MANY_FAILED_ATTEMPTS",
    message: "too many failed authentications from this source address to this listener; retry after the seconds in Retry-After",
  },
};

/**
 * The key of a client address: an IPv4 address, or the /64 network of an IPv6 one (a single
 * host is commonly given a whole /64, so its addresses would otherwise be limits of their own).
 */
export function sourceKey(address: string): string {
  // clientAddress answers IPv4 in dotted decimal already: no colon, nothing to parse again.
  if (!address.includes(":")) return address;
  const ip = normalizeAddress(address);
  if (!ip) return address;
  if (ip.kind() === "ipv4") return ip.toString();
  return `${new ipaddr.IPv6([...(ip as ipaddr.IPv6).parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

interface Applied {
  name: RatePolicyName;
  quota: RateQuota;
  decision: RateDecision;
}

export class RateLimits {
  private readonly limiters: Partial<Record<RatePolicyName, RateLimiter>> = {};

  constructor(
    quotas: RateLimitQuotas,
    clock: Clock,
    /** The live instances sharing the limits. */
    instances: () => number,
    private readonly trustProxy: readonly string[],
  ) {
    for (const name of Object.keys(quotas) as RatePolicyName[]) {
      const quota = quotas[name];
      if (quota) this.limiters[name] = new RateLimiter(quota, clock, instances);
    }
  }

  /** Whether any limit is on (the instances then keep a heartbeat). */
  get active(): boolean {
    return Object.keys(this.limiters).length > 0;
  }

  /** Admits the request by its client's address (X-Forwarded-For believed only from TRUST_PROXY), else throws 429. */
  admitSource(req: Request, res: Response): void {
    // The address is parsed only for a limit that uses it.
    if (!this.limiters.source) return;
    this.admit("source", this.clientKey(req), res);
  }

  private clientKey(req: Request): string {
    const forwardedFor = req.get("x-forwarded-for");
    return forwardedFor === undefined ? this.socketKey(req.socket) : this.sourceKeyOf(req.socket.remoteAddress, forwardedFor);
  }

  private sourceKeyOf(socketAddress: string | undefined, forwardedFor: string | undefined): string {
    return sourceKey(clientAddress(socketAddress, forwardedFor, this.trustProxy) ?? "");
  }

  /** A connection's own key: its peer address does not change, and a keep-alive connection carries many requests. */
  private readonly socketKeys = new WeakMap<object, string>();

  private socketKey(socket: Request["socket"]): string {
    let key = this.socketKeys.get(socket);
    if (key === undefined) this.socketKeys.set(socket, (key = this.sourceKeyOf(socket.remoteAddress, undefined)));
    return key;
  }

  /** Admits a request made with the credential `credentialId`, else throws 429. */
  admitCredential(credentialId: string, res: Response): void {
    this.admit("credential", credentialId, res);
  }

  /** The limits of a request to the webhook intake, which meets them in its order (webhooks/intake.ts). */
  forIntake(req: Request, res: Response): IntakeLimits {
    // Keyed by listener and address, as the token endpoint keys its failures by client id and
    // address: a sender whose deliveries to one listener fail still delivers to the others.
    const failures = (listenerId: string, count: "peek" | "charge") => {
      if (this.limiters["listener-failures"]) this.admit("listener-failures", `${listenerId} ${this.clientKey(req)}`, res, count);
    };
    return {
      screen: (listenerId) => failures(listenerId, "peek"),
      authenticated: (listenerId) => this.admit("listener", listenerId, res),
      failed: (listenerId) => failures(listenerId, "charge"),
    };
  }

  /**
   * Counts a request against the limit `name` (`peek`: only looks) and names the limit in the
   * answer's RateLimit fields; 429 when it refuses. A charge counts whatever the bucket held (the
   * work is done) and never refuses; a peek that admits counted nothing and names nothing.
   */
  private admit(name: RatePolicyName, key: string, res: Response, count: "take" | "peek" | "charge" = "take"): void {
    const limiter = this.limiters[name];
    if (!limiter) return;
    const decision = limiter[count](key);
    if (count === "peek" && decision.allowed) return;
    const applied = ((res.locals.rateLimits as Applied[] | undefined) ??= []);
    applied.push({ name, quota: limiter.quota, decision });
    res.setHeader("RateLimit-Policy", applied.map((a) => `"${a.name}";q=${a.quota.quota};w=${a.quota.windowSeconds}`).join(", "));
    res.setHeader("RateLimit", applied.map((a) => `"${a.name}";r=${a.decision.remaining};t=${a.decision.seconds}`).join(", "));
    if (!decision.allowed && count !== "charge") {
      res.locals.rateLimitedBy = name;
      const { reason, message } = REFUSALS[name];
      throw new ApiError(429, GrpcCode.RESOURCE_EXHAUSTED, reason, message, {
        metadata: { policy: name },
        headers: { "Retry-After": String(decision.seconds) },
      });
    }
  }
}
