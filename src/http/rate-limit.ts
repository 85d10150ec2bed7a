// The rate limits of the API: per source address on every operation, per credential on the
// operations that take an access token, per listener on the webhook intake. Each is checked as soon
// as its key is known and before any work that key's requests could make the server do: the source
// before authentication, the credential once the token's signature is verified but before the
// database is asked about it, the listener before the intake looks it up or reads the body.
//
// Answers carry the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers): RateLimit-Policy
// names each limit applied with its quota and window, RateLimit the requests still admitted and
// the seconds until they are all restored. A refusal is 429 RATE_LIMITED with Retry-After.
import type { NextFunction, Request, Response } from "express";
import ipaddr from "ipaddr.js";
import { operationRoutes } from "../../generated/server.js";
import type { Clock } from "../core/clock.js";
import { ApiError, GrpcCode } from "../core/errors.js";
import { isPathId } from "../core/ids.js";
import { RateLimiter, type RateDecision, type RateLimitQuotas, type RatePolicyName, type RateQuota } from "../core/rate-limiter.js";
import { clientAddress, normalizeAddress } from "../webhooks/source-ip.js";
import { expressPath } from "./route-table.js";

const REFUSALS: Record<RatePolicyName, string> = {
  source: "too many requests from this source address; retry after the seconds in Retry-After",
  credential: "too many requests with this credential; retry after the seconds in Retry-After",
  listener: "too many deliveries to this listener; retry after the seconds in Retry-After",
};

const INTAKE = operationRoutes.find((r) => r.operationId === "svc.api.webhooks.v1.IncomingWebhookService.Receive")!;
/** The webhook intake's route, as Express writes it: the listener limit guards it. */
export const LISTENER_ROUTE = expressPath(INTAKE.path);

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
    const forwardedFor = req.get("x-forwarded-for");
    this.admit("source", forwardedFor === undefined ? this.socketKey(req.socket) : this.sourceKeyOf(req.socket.remoteAddress, forwardedFor), res);
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

  /**
   * Express middleware of the intake's route: admits a delivery to the listener in the path, else
   * 429. An id no listener can have is left to the intake, which answers 404 without a lookup.
   */
  readonly admitListener = (req: Request, res: Response, next: NextFunction): void => {
    const id = req.params.listener_id;
    try {
      if (typeof id === "string" && isPathId(id)) this.admit("listener", id, res);
      next();
    } catch (e) {
      next(e);
    }
  };

  private admit(name: RatePolicyName, key: string, res: Response): void {
    const limiter = this.limiters[name];
    if (!limiter) return;
    const decision = limiter.take(key);
    const applied = ((res.locals.rateLimits as Applied[] | undefined) ??= []);
    applied.push({ name, quota: limiter.quota, decision });
    res.setHeader("RateLimit-Policy", applied.map((a) => `"${a.name}";q=${a.quota.quota};w=${a.quota.windowSeconds}`).join(", "));
    res.setHeader("RateLimit", applied.map((a) => `"${a.name}";r=${a.decision.remaining};t=${a.decision.seconds}`).join(", "));
    if (!decision.allowed) {
      throw new ApiError(429, GrpcCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", REFUSALS[name], {
        metadata: { policy: name },
        headers: { "Retry-After": String(decision.seconds) },
      });
    }
  }
}
