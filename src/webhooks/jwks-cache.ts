// Per-URL cache of JWKS key sets for JWT listeners. Keys are kept for `ttlMs`; an unknown `kid`
// triggers at most one refetch per `cooldownMs` (so a stream of tokens with made-up kids cannot
// make the server hammer the sender's JWKS); concurrent requests share one in-flight fetch; a
// failed fetch is not retried for `failureBackoffMs`. All time comes from the injected clock.
import { createLocalJWKSet, type JSONWebKeySet, type JWK } from "jose";
import { BoundedMap } from "../core/bounded-map.js";
import type { Clock } from "../core/clock.js";
import { unauthenticated } from "../core/errors.js";
import { fetchJwks, JwksFetchError, type FetchJwksOptions, type JwksDocument } from "./jwks-fetch.js";

export type JwksFetcher = (url: string) => Promise<JwksDocument>;

export interface JwksCacheOptions {
  clock: Clock;
  /** How keys are fetched. Default: fetchJwks(url, fetchOptions). */
  fetcher?: JwksFetcher;
  /** Options of the default fetcher (allowInsecure, timeouts, size cap). */
  fetchOptions?: FetchJwksOptions;
  /** How long fetched keys are used before they are fetched again. Default 10 minutes. */
  ttlMs?: number;
  /** Least time between two fetches of one URL caused by an unknown kid. Default 30 s. */
  cooldownMs?: number;
  /** After a failed fetch, requests fail at once (401) for this long instead of fetching again. Default 5 s. */
  failureBackoffMs?: number;
  /** Most URLs kept; the least recently used is dropped beyond it. Default 1000. */
  maxUrls?: number;
}

export const JWKS_CACHE_DEFAULTS = { ttlMs: 10 * 60_000, cooldownMs: 30_000, failureBackoffMs: 5_000, maxUrls: 1000 } as const;

/** The usable keys of one fetched JWKS. */
export interface CachedKeySet {
  /** For jose's jwtVerify: picks the key by `kid`, `alg`, `kty`, `crv` and `use`. */
  readonly getKey: ReturnType<typeof createLocalJWKSet>;
  /** The kids of the usable keys. */
  readonly kids: ReadonlySet<string>;
  readonly fetchedAt: number;
}

interface Entry {
  keys?: CachedKeySet;
  /** When the last fetch started, whatever its outcome. */
  lastAttemptAt?: number;
  failure?: { at: number; error: JwksFetchError };
  inflight?: Promise<JwksFetchError | undefined>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/**
 * Only public signature keys of the three supported kinds, each with a kid: RSA (RS256),
 * EC P-256 (ES256) and OKP Ed25519 (EdDSA). Anything else in the set is ignored.
 */
export function usableKeys(document: JwksDocument): JWK[] {
  return document.keys.filter((key): key is JWK => {
    if (!isRecord(key)) return false;
    if (typeof key.kid !== "string" || key.kid.length === 0) return false;
    if (key.use !== undefined && key.use !== "sig") return false;
    if (PRIVATE_MEMBERS.some((m) => m in key)) return false;
    switch (key.kty) {
      case "RSA":
        return typeof key.n === "string" && typeof key.e === "string";
      case "EC":
        return key.crv === "P-256" && typeof key.x === "string" && typeof key.y === "string";
      case "OKP":
        return key.crv === "Ed25519" && typeof key.x === "string";
      default:
        return false;
    }
  });
}

export class JwksCache {
  private readonly entries: BoundedMap<string, Entry>;
  private readonly clock: Clock;
  private readonly fetcher: JwksFetcher;
  private readonly ttlMs: number;
  private readonly cooldownMs: number;
  private readonly failureBackoffMs: number;

  constructor(options: JwksCacheOptions) {
    this.clock = options.clock;
    const fetchOptions = options.fetchOptions ?? {};
    this.fetcher = options.fetcher ?? ((url) => fetchJwks(url, fetchOptions));
    this.ttlMs = options.ttlMs ?? JWKS_CACHE_DEFAULTS.ttlMs;
    this.cooldownMs = options.cooldownMs ?? JWKS_CACHE_DEFAULTS.cooldownMs;
    this.failureBackoffMs = options.failureBackoffMs ?? JWKS_CACHE_DEFAULTS.failureBackoffMs;
    this.entries = new BoundedMap({ entries: options.maxUrls ?? JWKS_CACHE_DEFAULTS.maxUrls });
  }

  /**
   * The key set of `url` that holds `kid`. Fetches when nothing is cached or the keys are older
   * than the TTL, and once more per cooldown when `kid` is unknown.
   * 401 JWKS_UNAVAILABLE when the JWKS cannot be fetched, 401 INVALID_JWT when `kid` is not in it.
   */
  async keySetFor(url: string, kid: string): Promise<CachedKeySet> {
    const entry = this.entry(url);
    if (!entry.keys || this.clock.now() - entry.keys.fetchedAt >= this.ttlMs) await this.refresh(url, entry);
    if (entry.keys?.kids.has(kid)) return entry.keys;
    // Unknown kid: the sender may have rotated its keys. Join a fetch under way, or start one if
    // the last one started longer ago than the cooldown.
    if (entry.inflight || entry.lastAttemptAt === undefined || this.clock.now() - entry.lastAttemptAt >= this.cooldownMs) {
      await this.refresh(url, entry);
    }
    if (entry.keys?.kids.has(kid)) return entry.keys;
    throw unauthenticated("INVALID_JWT", "the JWT header kid does not name a key in the JWKS", {
      metadata: { check: "kid" },
      headers: { "WWW-Authenticate": 'Bearer error="invalid_token"' },
    });
  }

  /** Drops what is cached for `url` (e.g. when a listener's JWKS URL changes). */
  forget(url: string): void {
    this.entries.delete(url);
  }

  private entry(url: string): Entry {
    const known = this.entries.touch(url);
    if (known) return known;
    const entry: Entry = {};
    this.entries.set(url, entry);
    return entry;
  }

  /** Fetches `url` again, or joins the fetch under way; 401 JWKS_UNAVAILABLE when it fails. */
  private async refresh(url: string, entry: Entry): Promise<void> {
    if (!entry.inflight) {
      const now = this.clock.now();
      if (entry.failure && now - entry.failure.at < this.failureBackoffMs) throw unavailable(entry.failure.error);
      entry.lastAttemptAt = now;
      entry.inflight = this.load(url, entry).finally(() => {
        entry.inflight = undefined;
      });
    }
    const error = await entry.inflight;
    if (error) throw unavailable(error);
  }

  /** One fetch: on success the keys are replaced; on failure the error is kept for the backoff. */
  private async load(url: string, entry: Entry): Promise<JwksFetchError | undefined> {
    try {
      const document = await this.fetcher(url);
      const keys = usableKeys(document);
      const set: JSONWebKeySet = { keys };
      entry.keys = { getKey: createLocalJWKSet(set), kids: new Set(keys.map((k) => k.kid as string)), fetchedAt: this.clock.now() };
      entry.failure = undefined;
      return undefined;
    } catch (e) {
      const error = e instanceof JwksFetchError ? e : new JwksFetchError("INVALID_CONTENT", "the JWKS could not be used", { cause: e });
      // Keys still within their TTL stay usable (a failed refetch for an unknown kid does not
      // disable the known ones); expired keys are never used, as every request refetches them.
      entry.failure = { at: this.clock.now(), error };
      return error;
    }
  }
}

function unavailable(error: JwksFetchError) {
  return unauthenticated("JWKS_UNAVAILABLE", `the listener's JWKS could not be fetched (${error.code}): ${error.message}`, {
    metadata: { check: "jwks", cause: error.code },
  });
}
