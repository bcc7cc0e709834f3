/**
 * A map bounded by total weight (for trees: their entry count, for blobs and packs: their byte
 * length) that evicts approximately least-recently-used entries. Values must be immutable: the
 * store caches git objects by oid, and an oid names the same content forever.
 *
 * Two generations instead of an exact recency list: new entries and hits on old ones go to the
 * young map; when the young map outweighs half the capacity it becomes the old map and the
 * previous old map is dropped whole. A hit in the young map is one `Map.get`, with no
 * delete-and-reinsert: path lookups hit the cache hundreds of thousands of times a second
 * during recovery and firing, and the exact list's bookkeeping cost ~6% of a fire commit.
 * What is evicted is everything not used since the previous rotation, which is at least
 * everything not used in the last half-capacity of insertions.
 */

type Slot<V> = { value: V; weight: number };

/**
 * The policy above for keys made of a scope (a repository) and a name (an oid), kept as
 * two-level maps: a lookup hashes the two strings it is given — the oid usually an entry's
 * own string, whose hash V8 keeps — instead of building and hashing a `<repo>\0<oid>` string
 * per lookup, which cost more than the lookup itself on hot paths.
 */
export class ScopedLruCache<V> {
  #young = new Map<string, Map<string, Slot<V>>>();
  #old = new Map<string, Map<string, Slot<V>>>();
  #youngWeight = 0;
  #oldWeight = 0;
  readonly #capacity: number;

  /** @param capacity the largest total weight kept (about); an entry heavier than this is not cached. */
  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity);
  }

  /** Total weight of the cached entries. */
  get weight(): number {
    return this.#youngWeight + this.#oldWeight;
  }

  /** Number of cached entries. */
  get size(): number {
    let n = 0;
    for (const map of this.#young.values()) n += map.size;
    for (const map of this.#old.values()) n += map.size;
    return n;
  }

  has(scope: string, key: string): boolean {
    return this.#young.get(scope)?.has(key) === true || this.#old.get(scope)?.has(key) === true;
  }

  get(scope: string, key: string): V | undefined {
    const young = this.#young.get(scope)?.get(key);
    if (young !== undefined) return young.value;
    const oldScope = this.#old.get(scope);
    const old = oldScope?.get(key);
    if (old === undefined) return undefined;
    oldScope?.delete(key);
    this.#oldWeight -= old.weight;
    this.#addYoung(scope, key, old);
    return old.value;
  }

  set(scope: string, key: string, value: V, weight = 1): void {
    this.delete(scope, key);
    if (weight > this.#capacity) return;
    this.#addYoung(scope, key, { value, weight });
  }

  delete(scope: string, key: string): boolean {
    const youngScope = this.#young.get(scope);
    const young = youngScope?.get(key);
    if (young !== undefined) {
      youngScope?.delete(key);
      this.#youngWeight -= young.weight;
      return true;
    }
    const oldScope = this.#old.get(scope);
    const old = oldScope?.get(key);
    if (old !== undefined) {
      oldScope?.delete(key);
      this.#oldWeight -= old.weight;
      return true;
    }
    return false;
  }

  clear(): void {
    this.#young = new Map();
    this.#old = new Map();
    this.#youngWeight = 0;
    this.#oldWeight = 0;
  }

  #addYoung(scope: string, key: string, slot: Slot<V>): void {
    let map = this.#young.get(scope);
    if (map === undefined) {
      map = new Map();
      this.#young.set(scope, map);
    }
    map.set(key, slot);
    this.#youngWeight += slot.weight;
    if (this.#youngWeight > this.#capacity / 2) {
      this.#old = this.#young;
      this.#oldWeight = this.#youngWeight;
      this.#young = new Map();
      this.#youngWeight = 0;
    }
  }
}

/** The policy above for plain string keys: a {@link ScopedLruCache} with one scope. */
export class LruCache<V> {
  readonly #cache: ScopedLruCache<V>;

  /** @param capacity the largest total weight kept (about); an entry heavier than this is not cached. */
  constructor(capacity: number) {
    this.#cache = new ScopedLruCache(capacity);
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Total weight of the cached entries. */
  get weight(): number {
    return this.#cache.weight;
  }

  /** The value for `key`, which becomes recently used, or undefined. */
  get(key: string): V | undefined {
    return this.#cache.get("", key);
  }

  has(key: string): boolean {
    return this.#cache.has("", key);
  }

  /** Stores `value` with `weight` (default 1), evicting old entries to fit. */
  set(key: string, value: V, weight = 1): void {
    this.#cache.set("", key, value, weight);
  }

  /** Removes `key`. @returns whether it was cached */
  delete(key: string): boolean {
    return this.#cache.delete("", key);
  }

  clear(): void {
    this.#cache.clear();
  }
}
