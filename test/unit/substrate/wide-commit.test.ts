import { describe, expect, it } from "vitest";
import { REPO, createMemStore } from "../../helpers/memfs-repo-store.js";

/**
 * One write creating more new trees than a call may take as arguments (V8 caps spread
 * arguments at ~120,000 on a default stack): each of 100,000 new runs brings two trees
 * (`runs/<id>/` and its `events/`), so the commit holds 200,002 new trees.
 */
describe("a commit with 200,000 new trees", () => {
  it("commits in one write and reads back", async () => {
    const { store } = createMemStore({ packThreshold: 3 });
    await store.initRepo(null, REPO);
    const runs = 100_000;
    const files = new Map<string, string>();
    for (let i = 0; i < runs; i++) files.set(`runs/r${String(i).padStart(6, "0")}/events/1.json`, `{"seq":1,"i":${i}}`);
    const written = await store.writeTree(null, REPO, "main", { files, message: "100,000 runs at once" });
    expect(written.committed).toBe(true);
    const reads = await store.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs/")).toHaveLength(runs);
    expect(Buffer.from((await reads.readBlob("runs/r099999/events/1.json")) as Uint8Array).toString()).toBe('{"seq":1,"i":99999}');
    await store.close();
  }, 120_000);
});
