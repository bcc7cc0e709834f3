/**
 * A least-recently-used map bounded by total weight (for trees: their entry count, for blobs:
 * their byte length). Values must be immutable: the store caches git objects by oid, and an
 * oid names the same content forever.
 */
export class LruCache<K, V> {
  readonly #map = new Map<K, { value: V; weight: number }>();
  readonly #capacity: number;
  #weight = 0;

  /** @param capacity the largest total weight kept; an entry heavier than this is not cached. */
  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity);
  }

  get size(): number {
    return this.#map.size;
  }

  /** Total weight of the cached entries. */
  get weight(): number {
    return this.#weight;
  }

  /** The value for `key`, which becomes the most recently used, or undefined. */
  get(key: K): V | undefined {
    const slot = this.#map.get(key);
    if (slot === undefined) return undefined;
    // Map iteration order is insertion order, so re-inserting marks the entry as newest.
    this.#map.delete(key);
    this.#map.set(key, slot);
    return slot.value;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** Stores `value` with `weight` (default 1), evicting the oldest entries to fit. */
  set(key: K, value: V, weight = 1): void {
    const old = this.#map.get(key);
    if (old !== undefined) {
      this.#map.delete(key);
      this.#weight -= old.weight;
    }
    if (weight > this.#capacity) return;
    this.#map.set(key, { value, weight });
    this.#weight += weight;
    while (this.#weight > this.#capacity) {
      const oldest = this.#map.keys().next();
      if (oldest.done === true) break;
      const slot = this.#map.get(oldest.value);
      this.#map.delete(oldest.value);
      if (slot !== undefined) this.#weight -= slot.weight;
    }
  }

  clear(): void {
    this.#map.clear();
    this.#weight = 0;
  }
}
