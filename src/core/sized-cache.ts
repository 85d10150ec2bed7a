// A map bounded both by its number of entries and by the total of their sizes, for caches whose
// entries vary widely in size (a webhook listener kept with its automation's steps: from a few
// bytes to the 256 KiB a body may carry). The oldest entry goes first; a refreshed one is newest.

export interface SizedCacheLimits {
  entries: number;
  /** The most the sizes of the entries may add up to; an entry larger than this is not kept. */
  size: number;
}

export class SizedCache<K, V> {
  private readonly map = new Map<K, { value: V; size: number }>();
  private total = 0;

  constructor(private readonly limits: SizedCacheLimits) {}

  get(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  /** Keeps `value` as the newest entry, forgetting the oldest ones as the limits require. */
  set(key: K, value: V, size: number): void {
    this.delete(key);
    if (size > this.limits.size) return;
    while (this.map.size >= this.limits.entries || this.total + size > this.limits.size) {
      const oldest = this.map.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
    this.map.set(key, { value, size });
    this.total += size;
  }

  delete(key: K): void {
    const entry = this.map.get(key);
    if (!entry) return;
    this.map.delete(key);
    this.total -= entry.size;
  }

  /** Entries kept, and the sum of their sizes. */
  get usage(): { entries: number; size: number } {
    return { entries: this.map.size, size: this.total };
  }
}
