// Throttles repeated authentication failures per client id: after MAX_FAILURES within WINDOW_MS, the
// client id is refused (429) until the window has passed, whatever secret it sends.
import type { Clock } from "../core/clock.js";

const MAX_FAILURES = 5;
const WINDOW_MS = 5 * 60_000;
const MAX_TRACKED = 10_000;

export class FailureThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly clock: Clock) {}

  private recent(clientId: string): number[] {
    const since = this.clock.now() - WINDOW_MS;
    const times = (this.failures.get(clientId) ?? []).filter((t) => t > since);
    if (times.length === 0) this.failures.delete(clientId);
    else this.failures.set(clientId, times);
    return times;
  }

  /** Seconds until `clientId` may try again, or 0 when it may try now. */
  retryAfterSeconds(clientId: string): number {
    const times = this.recent(clientId);
    if (times.length < MAX_FAILURES) return 0;
    const oldest = times[times.length - MAX_FAILURES] ?? this.clock.now();
    return Math.max(1, Math.ceil((oldest + WINDOW_MS - this.clock.now()) / 1000));
  }

  recordFailure(clientId: string): void {
    if (this.failures.size >= MAX_TRACKED && !this.failures.has(clientId)) {
      const first = this.failures.keys().next();
      if (!first.done) this.failures.delete(first.value);
    }
    this.failures.set(clientId, [...this.recent(clientId), this.clock.now()]);
  }

  clear(clientId: string): void {
    this.failures.delete(clientId);
  }
}
