// A rate limit by key, in memory: a token bucket per key that holds `quota` requests and refills
// at `quota` per window. Several instances share one limit by each enforcing its share (the quota
// divided by the live instances it counts), so no request waits on the database.
//
// The bucket is kept as its debt: what the key has used and not yet earned back, in units of
// (milliseconds x quota), so that every quantity is an exact integer: a request costs
// `window x instances`, the bucket holds `window x quota`, and the debt falls by `quota` each
// millisecond. The share changes with the count of instances, the debt does not: a key that used
// half of its share still has half of it left. However many instances there are, each admits at
// least one request a window.
//
// Memory is bounded: at most `maxKeys` keys, the least recently seen forgotten first (a forgotten
// key starts again with a full bucket), so a flood of distinct keys cannot grow it.
import { BoundedMap } from "./bounded-map.js";
import type { Clock } from "./clock.js";

export interface RateQuota {
  /** Requests allowed per window, over every instance together. */
  quota: number;
  windowSeconds: number;
}

/** The limits of the API: per client address, per credential, per webhook listener. */
export type RatePolicyName = "source" | "credential" | "listener";

/** The quota of each limit; null where it is off. */
export type RateLimitQuotas = Record<RatePolicyName, RateQuota | null>;

export interface RateDecision {
  allowed: boolean;
  /** Whole requests this instance still admits for the key right now (0 when refused). */
  remaining: number;
  /**
   * Admitted: seconds until the key's bucket is full again (0 if it is). Refused: seconds until the
   * key's next request is admitted (at least 1).
   */
  seconds: number;
}

interface Bucket {
  debt: number;
  at: number;
}

/** Keys kept per limit; 100 to 300 bytes each (a listener id is up to 128 characters). */
export const MAX_KEYS = 100_000;

export class RateLimiter {
  private readonly buckets: BoundedMap<string, Bucket>;

  constructor(
    readonly quota: RateQuota,
    private readonly clock: Clock,
    /** The live instances sharing the limit, at least 1. */
    private readonly instances: () => number,
    maxKeys = MAX_KEYS,
  ) {
    this.buckets = new BoundedMap({ entries: maxKeys });
  }

  /** Takes one request for `key` if its bucket has room. */
  take(key: string): RateDecision {
    const now = this.clock.now();
    const windowMs = this.quota.windowSeconds * 1000;
    const capacity = windowMs * this.quota.quota;
    const cost = windowMs * Math.min(this.quota.quota, Math.max(1, this.instances()));
    const bucket = this.buckets.get(key);
    const debt = bucket ? Math.max(0, bucket.debt - Math.max(0, now - bucket.at) * this.quota.quota) : 0;
    const allowed = debt + cost <= capacity;
    const after = allowed ? debt + cost : debt;
    // Set anew, so that the key forgotten first is the one seen longest ago.
    this.buckets.set(key, { debt: after, at: now });
    const msUntil = (debtToShed: number) => debtToShed / this.quota.quota;
    return allowed
      ? { allowed, remaining: Math.floor((capacity - after) / cost), seconds: Math.ceil(msUntil(after) / 1000) }
      : { allowed, remaining: 0, seconds: Math.max(1, Math.ceil(msUntil(debt + cost - capacity) / 1000)) };
  }

  /** Keys held now (for tests of the memory bound). */
  get size(): number {
    return this.buckets.usage.entries;
  }
}
