/**
 * Properties of reading a run's log and appending to it when the log was written by others
 * (a `git push` skips validatePush, so anything can be in a run's `events/` folder): valid
 * events, unreadable files, names that are not `<seq>.json`, folders where a file should be,
 * gaps, events after a terminal event.
 *
 * - The reader never throws and accounts for every entry: each is an event, or reported (bad,
 *   or a problem), and the events are exactly the valid ones up to the first terminal event.
 * - The next seq the reader names (`maxFileSeq + 1`) is one the store's own validation takes:
 *   an append to a run that has not ended commits there, so no log anyone can push makes a run
 *   unwritable for the host or a signal sender; an append to a run that ended is refused.
 *
 * Counterexamples this found are kept in `counterexamples.test.ts`.
 */
import fc from "fast-check";
import { describe, it } from "vitest";
import { propertyRuns } from "./property-runs.js";
import { checkPushedFolder, folderArb, stores } from "./pushed-folder.js";

const RUNS = propertyRuns();

describe("run logs written by others", () => {
  it("are read without throwing, every entry accounted for, and appended to at a seq validation accepts", async () => {
    const { store, raw } = stores();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(folderArb, (entries) => checkPushedFolder(store, raw, `p${(n += 1)}`, entries)),
      RUNS,
    );
    await store.close();
    await raw.close();
  }, 120_000);
});
