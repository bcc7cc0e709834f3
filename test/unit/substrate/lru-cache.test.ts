import { describe, expect, it } from "vitest";
import { LruCache } from "../../../src/substrate/lru-cache.js";

describe("LruCache", () => {
  it("evicts the least recently used entries once the total weight exceeds the capacity", () => {
    const cache = new LruCache<number>(10);
    cache.set("a", 1, 4);
    cache.set("b", 2, 4);
    expect(cache.get("a")).toBe(1); // "b" is now the oldest
    cache.set("c", 3, 4);
    expect(cache.has("b")).toBe(false);
    expect(cache.get("a")).toBe(1);
    expect(cache.get("c")).toBe(3);
    expect(cache.weight).toBe(8);
  });

  it("does not cache an entry heavier than the whole capacity, and re-weighs replaced keys", () => {
    const cache = new LruCache<string>(5);
    cache.set("big", "x", 6);
    expect(cache.has("big")).toBe(false);
    cache.set("k", "v1", 2);
    cache.set("k", "v2", 3);
    expect(cache.get("k")).toBe("v2");
    expect(cache.weight).toBe(3);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
