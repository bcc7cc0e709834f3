/**
 * The store's `beforeRefMove` seam (cluster mode pushes each commit to the remote there): it
 * sees the ref's old and new value once the commit's objects are readable, before the ref
 * moves, and a refusal leaves the ref where it was.
 */
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { RefMove } from "../../../src/substrate/types.js";
import { appendNext } from "../../helpers/append-merge.js";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";

describe("beforeRefMove", () => {
  it("is called with the old and the new commit, whose objects are already readable, before the ref moves", async () => {
    const moves: { move: RefMove; refAtCall: string | null; readable: boolean }[] = [];
    const { store } = createMemStore({
      beforeRefMove: async (move) => {
        const refAtCall = await store.resolveRef(null, REPO, "main");
        const readable = (await store.openCommittedReads(null, REPO, move.to).then(() => true, () => false)) === true;
        moves.push({ move, refAtCall, readable });
      },
    });
    const genesis = (await store.initRepo(null, REPO)).commitSha;
    const first = await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    const second = await store.writeTree(null, REPO, "main", { files: { "notes/a.txt": "x" }, message: "x" });
    expect(moves.map((m) => [m.move.ref, m.move.from, m.move.to])).toEqual([
      ["refs/heads/main", genesis, first.commitSha],
      ["refs/heads/main", first.commitSha, second.commitSha],
    ]);
    expect(moves.map((m) => m.refAtCall)).toEqual([genesis, first.commitSha]);
    expect(moves.every((m) => m.readable)).toBe(true);
  });

  it("a refusal aborts the write with its error and leaves the ref where it was; nothing is committed", async () => {
    let refuse = false;
    const { store } = createMemStore({
      beforeRefMove: async () => {
        if (refuse) throw new WorkflowHostError("remote_rejected", "the remote moved", {});
      },
    });
    await store.initRepo(null, REPO);
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    const tip = await store.resolveRef(null, REPO, "main");
    refuse = true;
    await expect(store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })))).rejects.toMatchObject({ code: "remote_rejected" });
    expect(await store.resolveRef(null, REPO, "main")).toBe(tip);
    refuse = false;
    expect(await store.writeTree(null, REPO, "main", { files: { "notes/a.txt": "x" }, message: "x" })).toMatchObject({ committed: true, parentSha: tip });
  });
});
