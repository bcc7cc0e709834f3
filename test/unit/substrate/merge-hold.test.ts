/**
 * A commit in flight holds the merge thread back (pack-merge-thread.ts `holdMerges`): the write
 * engine takes the hold before the plan and releases it once the ref moved, or the write failed.
 */
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import { commitsInFlight, holdMerges } from "../../../src/substrate/pack-merge-thread.js";
import { appendNext } from "../../helpers/append-merge.js";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";

describe("merge hold during commits", () => {
  it("is taken from the plan to the ref's move and released after the write, also when it fails", async () => {
    let refuse = false;
    const seen: number[] = [];
    const { store } = createMemStore({
      beforeRefMove: async () => {
        seen.push(commitsInFlight());
        if (refuse) throw new WorkflowHostError("remote_rejected", "the remote moved", {});
      },
    });
    await store.initRepo(null, REPO);
    expect(commitsInFlight()).toBe(0);
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    expect(commitsInFlight()).toBe(0);
    await store.writeTree(null, REPO, "other", { files: { "notes/b.txt": "b" }, message: "b" });
    expect(commitsInFlight()).toBe(0);
    refuse = true;
    await expect(store.writeTree(null, REPO, "main", { files: { "notes/c.txt": "c" }, message: "c" })).rejects.toMatchObject({ code: "remote_rejected" });
    expect(commitsInFlight()).toBe(0);
    expect(seen).toEqual([1, 1, 1]);
    // A plan that throws, and one that is refused before anything is written.
    await expect(
      store.writeTreeDelta(null, REPO, "main", {
        message: "d",
        computeDelta: () => {
          throw new WorkflowHostError("event_invalid", "no delta", {});
        },
      }),
    ).rejects.toMatchObject({ code: "event_invalid" });
    expect(commitsInFlight()).toBe(0);
    await expect(store.writeTree(null, REPO, "main", { files: { "../escape.txt": "x" }, message: "e" })).rejects.toMatchObject({ code: "path_violation" });
    expect(commitsInFlight()).toBe(0);
  });

  it("a release counts once however often it is called", () => {
    const release = holdMerges();
    const other = holdMerges();
    expect(commitsInFlight()).toBe(2);
    release();
    release();
    expect(commitsInFlight()).toBe(1);
    other();
    expect(commitsInFlight()).toBe(0);
  });
});
