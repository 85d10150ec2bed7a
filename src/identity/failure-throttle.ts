// Throttles guessing of client secrets. An attempt is counted before its secret is checked, so
// guesses sent all at once count like guesses sent one by one; a success clears the count. After
// MAX_FAILURES within WINDOW_MS the key is refused (429) until the window has passed, whatever
// secret it sends, so a right guess cannot be told from a wrong one. The grant keys it by client
// id and source address: an attacker elsewhere cannot lock the real client out.
import type { Clock } from "../core/clock.js";

const MAX_FAILURES = 5;
const WINDOW_MS = 5 * 60_000;
const MAX_TRACKED = 10_000;

export class FailureThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly clock: Clock) {}

  private recent(key: string): number[] {
    const since = this.clock.now() - WINDOW_MS;
    const times = (this.failures.get(key) ?? []).filter((t) => t > since);
    if (times.length === 0) this.failures.delete(key);
    else this.failures.set(key, times);
    return times;
  }

  /**
   * Admits one attempt for `key`: 0 when admitted (it counts as a failure until `clear`), else the
   * seconds until `key` may try again.
   */
  admit(key: string): number {
    const times = this.recent(key);
    const now = this.clock.now();
    if (times.length >= MAX_FAILURES) {
      const oldest = times[times.length - MAX_FAILURES] ?? now;
      return Math.max(1, Math.ceil((oldest + WINDOW_MS - now) / 1000));
    }
    if (this.failures.size >= MAX_TRACKED && !this.failures.has(key)) {
      const first = this.failures.keys().next();
      if (!first.done) this.failures.delete(first.value);
    }
    this.failures.set(key, [...times, now]);
    return 0;
  }

  /** Forgets the failures of `key` (its attempt succeeded). */
  clear(key: string): void {
    this.failures.delete(key);
  }
}
