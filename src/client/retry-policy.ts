// When the typed client may send a request again, and how long it waits first. Only what cannot
// have done anything twice is retried: a method idempotent by HTTP's definition, or a POST or PATCH
// that carries an Idempotency-Key (the server answers a repeated key with the first answer).

export interface RetryOptions {
  /** Attempts in all, the first one included (default 3). */
  maxAttempts?: number;
  /** No retry starts once this many milliseconds have passed since the first attempt, nor a wait that would end later (default 30 000). */
  maxElapsedMs?: number;
  /** The backoff's ceiling for the first retry, doubled at each retry (default 250 ms). */
  baseDelayMs?: number;
  /** The backoff's largest ceiling (default 8 000 ms). A server's `Retry-After` or RateLimit wait is not capped by it, only by `maxElapsedMs`. */
  maxDelayMs?: number;
  /** Adds an Idempotency-Key (a random UUID) to a call of an operation that takes one, when the call sends none (default false). */
  generateIdempotencyKeys?: boolean;
  /** How the client waits (default: a timer that the call's abort signal cuts short); tests pass their own. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
  /** The time in milliseconds since the epoch (default Date.now). */
  now?: () => number;
}

export type RetryPolicy = Required<Omit<RetryOptions, "generateIdempotencyKeys">>;

/** The answers worth another attempt: a timeout, a rate limit, a service unavailable for the moment. */
export const RETRY_STATUSES: readonly number[] = [408, 429, 503];

const IDEMPOTENT_METHODS = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];

export function retryPolicy(options: RetryOptions): RetryPolicy {
  return {
    maxAttempts: Math.max(1, options.maxAttempts ?? 3),
    maxElapsedMs: options.maxElapsedMs ?? 30_000,
    baseDelayMs: options.baseDelayMs ?? 250,
    maxDelayMs: options.maxDelayMs ?? 8_000,
    sleep: options.sleep ?? timer,
    random: options.random ?? Math.random,
    now: options.now ?? Date.now,
  };
}

/** Resolves after `ms`, or rejects with the abort's reason as soon as the call is aborted. */
function timer(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(id);
      reject(signal.reason);
    };
    const id = setTimeout(() => {
      signal.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal.addEventListener("abort", abort, { once: true });
  });
}

export const mayRetry = (request: Request): boolean => IDEMPOTENT_METHODS.includes(request.method) || request.headers.has("Idempotency-Key");

/** Exponential backoff with full jitter: a random wait up to the ceiling of this retry (1 for the first). */
export const backoffMs = (retry: number, policy: RetryPolicy): number => policy.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
