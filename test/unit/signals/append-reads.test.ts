/**
 * Appends read what they need, not the whole log (issue 19, item 8: one signal into a
 * 100 000-event run read every blob of the run and took 6.2 s).
 */
import { createFsFromVolume, Volume } from "memfs";
import { describe, expect, it } from "vitest";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { eventPath } from "../../../src/workflow/paths.js";
import { workflowRunKind, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";

const RID = { kind: WORKFLOW_RUN_KIND, id: "dep" } as const;
const EVENTS = 2_000;

/** Counts the blobs read through the reads every write hands to its plan. */
function countingStore(store: RepoStore): { store: RepoStore; blobReads: () => number } {
  let reads = 0;
  const count = (r: CommittedReads): CommittedReads => ({
    ...r,
    listDir: (path) => r.listDir(path),
    treeOid: (path) => r.treeOid(path),
    readBlob: (path) => {
      reads += 1;
      return r.readBlob(path);
    },
    readBlobByOid: (oid) => {
      reads += 1;
      return r.readBlobByOid(oid);
    },
  });
  const wrapped: RepoStore = Object.create(store) as RepoStore;
  Object.assign(wrapped, {
    writeTreeDelta: (p: unknown, rid: typeof RID, ref: string, o: Parameters<RepoStore["writeTreeDelta"]>[3]) =>
      store.writeTreeDelta(p, rid, ref, { ...o, computeDelta: (parent, r) => o.computeDelta(parent, count(r)) }),
    writeTreePreservingPrefix: (p: unknown, rid: typeof RID, ref: string, o: Parameters<RepoStore["writeTreePreservingPrefix"]>[3]) =>
      store.writeTreePreservingPrefix(p, rid, ref, {
        ...o,
        merge: (existing, parent, others, oids) => {
          reads += existing.size;
          return o.merge(existing, parent, others, oids);
        },
      }),
  });
  return { store: wrapped, blobReads: () => reads };
}

async function seededStore(): Promise<{ fs: ReturnType<typeof createFsFromVolume>; clock: ReturnType<typeof createFakeClock> }> {
  const fs = createFsFromVolume(new Volume());
  const clock = createFakeClock("2026-05-01T00:00:00.000Z");
  const store = createRepoStore({ dataDir: "/data", fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
  await store.initRepo(null, RID);
  const files: Record<string, string> = {};
  for (let seq = 1; seq <= EVENTS; seq++) files[eventPath("big", seq)] = JSON.stringify({ seq, type: "StepCompleted", data: { step: seq } });
  await store.writeTree(null, RID, "refs/heads/main", { files, message: "a long run" });
  await store.close();
  return { fs, clock };
}

describe("appends into a long run", () => {
  it("read no earlier event once the log is known, and only the added ones after another writer appended", async () => {
    const { fs, clock } = await seededStore();
    const base = createRepoStore({ dataDir: "/data", fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
    const { store, blobReads } = countingStore(base);
    const channel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: "dep", runId: "big", clock: clock.clock });
    const first = await channel.deliver("approve", { n: 1 }, "s-1");
    expect(first).toMatchObject({ seq: EVENTS + 1, duplicate: false });
    const afterFirst = blobReads();

    // Known log: the next appends read nothing already seen, and still deduplicate.
    expect(await channel.deliver("approve", { n: 2 }, "s-2")).toMatchObject({ seq: EVENTS + 2, duplicate: false });
    expect(await channel.deliver("approve", { n: 1 }, "s-1")).toMatchObject({ seq: EVENTS + 1, duplicate: true });
    expect(blobReads() - afterFirst).toBe(0);

    // Another process appends (its own store on the same data dir): only its event is read.
    const other = createRepoStore({ dataDir: "/data", fs, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
    const otherChannel = createWorkflowHostSignalChannel({ repoStore: other, principal: null, repoId: "dep", runId: "big", clock: clock.clock });
    expect(await otherChannel.deliver("approve", { n: 3 }, "s-3")).toMatchObject({ seq: EVENTS + 3 });
    const beforeAfterOther = blobReads();
    expect(await channel.deliver("approve", { n: 3 }, "s-3")).toMatchObject({ seq: EVENTS + 3, duplicate: true });
    expect(await channel.deliver("approve", { n: 4 }, "s-4")).toMatchObject({ seq: EVENTS + 4, duplicate: false });
    expect(blobReads() - beforeAfterOther).toBe(1);

    await Promise.all([channel.stop(), otherChannel.stop()]);
    await Promise.all([base.close(), other.close()]);
  });
});
