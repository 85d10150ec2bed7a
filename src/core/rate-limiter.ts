// A rate limit by key, in memory: a token bucket per key that holds `quota` requests and refills at
// `quota` per window. Several instances share one limit, each enforcing its share (the quota divided
// by the live instances it counts), so no request waits on the database. A limit of failures peeks
// before the work and charges after it. Memory is bounded by `maxKeys`, the least recently seen
// forgotten first. docs/operating.md, "Rate limits".
import { BoundedMap } from "./bounded-map.js";
import type { Clock } from "./clock.js";

export interface RateQuota {
  /** Requests allowed per window, over every instance together. */
  quota: number;
  windowSeconds: number;
}

/**
 * The limits of the API: per client address, per credential, per webhook listener (its deliveries
 * that authenticated), and per webhook listener and client address (its failed authentications).
 */
export type RatePolicyName = "source" | "credential" | "listener" | "listener-failures";

/** The quota of each limit; null where it is off. */
export type RateLimitQuotas = Record<RatePolicyName, RateQuota | null>;

export interface RateDecision {
  /** Admitted (by `take`, `peek`); for `charge`, whether the request fitted in the quota. */
  allowed: boolean;
  /** Whole requests this instance still admits for the key right now (0 when refused). */
  remaining: number;
  /**
   * Admitted: seconds until the key's bucket is full again (0 if it is). Refused: seconds until the
   * key's next request is admitted (at least 1).
   */
  seconds: number;
}

/**
 * A key's bucket, kept as its debt: what the key used and has not yet earned back, in milliseconds ×
 * quota, so every quantity is an exact integer (a request costs window × instances, the bucket holds
 * window × quota, the debt falls by quota each millisecond). The share changes with the count of
 * instances, the debt does not: a key that used half of its share still has half of it left.
 */
interface Bucket {
  debt: number;
  at: number;
}

/** A bucket's capacity and a request's cost, in the units of its debt. */
interface Measure {
  capacity: number;
  cost: number;
}

/** A key left with `debt`: whether that is within the quota, the requests it still has, the seconds until its bucket is full. */
const left = (debt: number, { capacity, cost }: Measure, { quota }: RateQuota): RateDecision => ({
  allowed: debt <= capacity,
  remaining: Math.max(0, Math.floor((capacity - debt) / cost)),
  seconds: Math.ceil(debt / quota / 1000),
});

/** A refusal: the seconds until the key's next request fits. */
const refused = ({ debt, capacity, cost }: Bucket & Measure, { quota }: RateQuota): RateDecision => ({
  allowed: false,
  remaining: 0,
  seconds: Math.max(1, Math.ceil((debt + cost - capacity) / quota / 1000)),
});

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
    const b = this.bucket(key);
    if (b.debt + b.cost > b.capacity) {
      // Seen anew, so that the key forgotten first is the one seen longest ago.
      this.buckets.set(key, { debt: b.debt, at: b.at });
      return refused(b, this.quota);
    }
    return this.keep(key, b);
  }

  /**
   * Counts one request for `key` that was served whatever its bucket held (a failure known only
   * once its work was done): what it takes past the quota delays the key's next admission.
   * `allowed` says whether it fitted.
   */
  charge(key: string): RateDecision {
    return this.keep(key, this.bucket(key));
  }

  /** What `take` would answer for `key`, taking nothing; a key not kept is not kept by it either. */
  peek(key: string): RateDecision {
    const b = this.bucket(key);
    return b.debt + b.cost > b.capacity ? refused(b, this.quota) : left(b.debt, b, this.quota);
  }

  /** The bucket of `key` now: its debt, refilled since it was last seen, and what it is held to. */
  private bucket(key: string): Bucket & Measure {
    const now = this.clock.now();
    const windowMs = this.quota.windowSeconds * 1000;
    const kept = this.buckets.get(key);
    return {
      at: now,
      debt: kept ? Math.max(0, kept.debt - Math.max(0, now - kept.at) * this.quota.quota) : 0,
      capacity: windowMs * this.quota.quota,
      cost: windowMs * Math.min(this.quota.quota, Math.max(1, this.instances())),
    };
  }

  /** Takes one request from `b`, past its capacity or not. */
  private keep(key: string, b: Bucket & Measure): RateDecision {
    const debt = b.debt + b.cost;
    this.buckets.set(key, { debt, at: b.at });
    return left(debt, b, this.quota);
  }

  /** Keys held now (for tests of the memory bound). */
  get size(): number {
    return this.buckets.usage.entries;
  }
}
