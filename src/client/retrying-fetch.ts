// A fetch that tries a request again after a connection error or a 408, 429 or 503 answer, as a
// RetryPolicy allows: the server's own wait when its headers give one, else backoff; never past the
// attempts or the time allowed, when it gives the last answer (or throws the last error) as it came.
import { backoffMs, mayRetry, RETRY_STATUSES, retryPolicy, type RetryOptions } from "./retry-policy.js";
import { serverWaitMs } from "./server-wait.js";

export function retryingFetch(fetch: typeof globalThis.fetch, options: RetryOptions): typeof globalThis.fetch {
  const policy = retryPolicy(options);
  return async (input, init) => {
    const request = new Request(input, init);
    if (!mayRetry(request)) return fetch(request);
    const started = policy.now();
    for (let attempt = 1; ; attempt++) {
      // Each attempt sends a copy: a body read once cannot be sent again.
      const outcome = await fetch(request.clone()).then(
        (response) => ({ response }),
        (error: unknown) => {
          // fetch rejects with a TypeError when no answer came (reset, refused, dropped); anything else (an abort) is the caller's.
          if (!(error instanceof TypeError)) throw error;
          return { error };
        },
      );
      if ("response" in outcome && !RETRY_STATUSES.includes(outcome.response.status)) return outcome.response;
      const wait = ("response" in outcome ? serverWaitMs(outcome.response.headers, policy.now()) : undefined) ?? backoffMs(attempt, policy);
      const giveUp = attempt >= policy.maxAttempts || policy.now() + wait - started > policy.maxElapsedMs || request.signal.aborted;
      if (giveUp) {
        if ("response" in outcome) return outcome.response;
        throw outcome.error;
      }
      if ("response" in outcome) await outcome.response.body?.cancel();
      await policy.sleep(wait, request.signal);
    }
  };
}
