/**
 * A stable sort of a large array that gives the event loop a turn as it goes: runs of
 * {@link SORT_RUN} items are sorted with `Array.prototype.sort` (stable), then merged pairwise,
 * with `pause()` awaited between runs and every {@link SORT_RUN} items merged. The result is the
 * order a stable `items.sort(compare)` gives (a new array; `items` is left as it is).
 */

/** Items sorted, or merged, between two pauses. */
export const SORT_RUN = 2_048;

/**
 * @param compare as for `Array.prototype.sort` (negative: `a` first)
 * @param pause awaited between two slices of work (e.g. a time slicer's `pause`)
 * @returns a new array, `items` sorted stably by `compare`
 */
export async function slicedSort<T>(items: readonly T[], compare: (a: T, b: T) => number, pause: () => Promise<void>): Promise<T[]> {
  let sorted: T[] = [];
  for (let start = 0; start < items.length; start += SORT_RUN) {
    await pause();
    const run = items.slice(start, start + SORT_RUN).sort(compare);
    for (let i = 0; i < run.length; i++) sorted.push(run[i] as T);
  }
  for (let width = SORT_RUN; width < sorted.length; width *= 2) {
    const merged: T[] = new Array<T>(sorted.length);
    let out = 0;
    for (let left = 0; left < sorted.length; left += 2 * width) {
      const mid = Math.min(left + width, sorted.length);
      const end = Math.min(left + 2 * width, sorted.length);
      let i = left;
      let j = mid;
      while (i < mid || j < end) {
        if (out % SORT_RUN === 0) await pause();
        // Ties keep the left run's item first: stable.
        if (j >= end || (i < mid && compare(sorted[i] as T, sorted[j] as T) <= 0)) merged[out++] = sorted[i++] as T;
        else merged[out++] = sorted[j++] as T;
      }
    }
    sorted = merged;
  }
  return sorted;
}
