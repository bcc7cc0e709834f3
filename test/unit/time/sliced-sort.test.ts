/** slicedSort: the order a stable Array.prototype.sort gives, with pauses between slices of work. */
import { describe, expect, it } from "vitest";
import { slicedSort, SORT_RUN } from "../../../src/time/sliced-sort.js";
import { seededRandom } from "../../helpers/seeded-random.js";

describe("slicedSort", () => {
  it("sorts stably (equal keys keep their order) over several runs, pausing between them", async () => {
    const random = seededRandom(76);
    const n = 5 * SORT_RUN + 17;
    const items = Array.from({ length: n }, (_, i) => ({ key: Math.floor(random() * 50), at: i }));
    let pauses = 0;
    const sorted = await slicedSort(items, (a, b) => a.key - b.key, () => {
      pauses += 1;
      return Promise.resolve();
    });
    expect(sorted).toEqual([...items].sort((a, b) => a.key - b.key));
    // Ties in input order: stable.
    for (let i = 1; i < sorted.length; i++) if (sorted[i]?.key === sorted[i - 1]?.key) expect((sorted[i]?.at ?? 0) > (sorted[i - 1]?.at ?? 0)).toBe(true);
    // At least once per run sorted and per SORT_RUN items of each merge pass.
    expect(pauses).toBeGreaterThanOrEqual(6 + 3 * 6);
    expect(items[0]?.at).toBe(0);
  });

  it("gives an empty or one-item array back as it is", async () => {
    const pause = (): Promise<void> => Promise.resolve();
    expect(await slicedSort([], (a: number, b: number) => a - b, pause)).toEqual([]);
    expect(await slicedSort([3], (a: number, b: number) => a - b, pause)).toEqual([3]);
  });
});
