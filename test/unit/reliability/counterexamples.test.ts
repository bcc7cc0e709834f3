/**
 * Shrunk counterexamples the reliability properties found, kept as plain tests so the faults
 * they exposed stay fixed whatever seed a later property run draws.
 */
import { afterAll, describe, it } from "vitest";
import { checkPushedFolder, stores, type Entry } from "./pushed-folder.js";

const { store, raw } = stores();
let n = 0;

afterAll(async () => {
  await store.close();
  await raw.close();
});

const check = (entries: readonly Entry[]): Promise<void> => checkPushedFolder(store, raw, `c${(n += 1)}`, entries);

describe("run-log property counterexamples", () => {
  it("appends after a folder named 1.json instead of being refused at seq 2", async () => {
    // The reader took seq 1 for the folder and appended at 2; validatePush did not count the
    // folder and wanted 0 or 1, so every append to the run (every fire) was refused.
    await check([{ name: "1.json", content: "folder" }]);
  });

  it("refuses to append to a run whose terminal event is followed by another event", async () => {
    // validatePush only looked at the last event (seq 1, a TimerSet), so the append after
    // RunCompleted at seq 0 was committed.
    await check([
      { name: "1.json", content: "timer" },
      { name: "0.json", content: "terminal" },
    ]);
  });

  it("leaves an event after the terminal one out of the log and reports it", async () => {
    await check([
      { name: "0.json", content: "terminal" },
      { name: "1.json", content: "signal" },
    ]);
  });
});
