// A map bounded by its number of entries and, for caches whose entries vary widely in size (a
// webhook listener kept with its automation's steps: from a few bytes to the 256 KiB a body may
// carry), by the total of their sizes. The oldest entry goes first. An entry set again, or touched,
// becomes the newest, so a cache that touches its hits forgets the least recently used.

export interface BoundedMapLimits {
  entries: number;
  /** The most the sizes of the entries may add up to; an entry larger than this is not kept. */
  size?: number;
}

export class BoundedMap<K, V> {
  private readonly map = new Map<K, { value: V; size: number }>();
  private total = 0;
  private readonly maxSize: number;

  constructor(private readonly limits: BoundedMapLimits) {
    this.maxSize = limits.size ?? Infinity;
  }

  get(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  /** The value of `key`, which becomes the newest entry. */
  touch(key: K): V | undefined {
    const entry = this.map.get(key);
    if (!entry) return undefined;
    this.map.delete(key);
    this.map.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` as the newest entry, forgetting the oldest ones as the limits require. */
  set(key: K, value: V, size = 0): void {
    this.delete(key);
    if (size > this.maxSize) return;
    while (this.map.size >= this.limits.entries || this.total + size > this.maxSize) {
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
