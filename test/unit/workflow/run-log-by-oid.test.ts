/**
 * `readRunLog` given the run folder's oid (`runTreeOid`, what a recovery has from the listing of
 * `runs/`) lists the run's folders by oid and reads the same log as by path, problems included,
 * and tells the `events` entry's oid (`RunLog.eventsOid`) as `treeOid` answers it.
 */
import { describe, expect, it } from "vitest";
import { encode, folder } from "../../helpers/object-folders.js";
import { createCommittedReads, type ObjectSource } from "../../../src/substrate/committed-reads.js";
import type { GitObject } from "../../../src/substrate/git-object.js";
import { decodeTree } from "../../../src/substrate/tree-object.js";
import type { CommittedReads, Oid } from "../../../src/substrate/types.js";
import { readRunLog, type RunLog } from "../../../src/workflow/run-log.js";

/** Builds trees bottom-up into `objects`; returns the tree's oid. */

function source(objects: Map<Oid, GitObject>): ObjectSource {
  const get = (oid: Oid): GitObject => {
    const object = objects.get(oid);
    if (object === undefined) throw new Error(`no ${oid}`);
    return object;
  };
  return {
    async readTree(oid) {
      const object = get(oid);
      if (object.type !== "tree") throw new Error(`${oid} is a ${object.type}`);
      return decodeTree(oid, object.content);
    },
    async readBlob(oid) {
      return get(oid).content;
    },
  };
}

/** `reads` that refuse to find anything below `runs/` by path. */
function noRunPaths(reads: CommittedReads): CommittedReads {
  const refuse = (path: string): void => {
    if (path.startsWith("runs/")) throw new Error(`${path} looked up by path`);
  };
  return {
    ...reads,
    listDir: async (path) => {
      refuse(path);
      return reads.listDir(path);
    },
    treeOid: async (path) => {
      refuse(path);
      return reads.treeOid(path);
    },
  };
}

const comparable = (log: RunLog): unknown => ({ ...log, eventsOid: undefined, lastEventOid: undefined, bad: log.bad.map((b) => [b.path, b.seq, b.error.code]), problems: log.problems.map((p) => [p.path, p.seq, p.error.code]) });

describe("readRunLog by the run folder's oid", () => {
  it("reads the same log as by path, bad events and strays included, without finding a path below runs/", async () => {
    const objects = new Map<Oid, GitObject>();
    const events = folder(objects, {
      "1.json": encode({ seq: 1, type: "WorkflowStarted", at: "2026-01-01T00:00:00.000Z", data: { workflow: "w" } }),
      "2.json": encode("{not json"),
      "3.json": encode({ seq: 3, type: "TimerSet", at: "2026-01-01T00:00:01.000Z", data: { timerId: "t", fireAt: "2026-01-02T00:00:00.000Z" } }),
      "x.json": encode("{}"),
      "5.json": encode({ seq: 5, type: "StepCompleted", at: "2026-01-01T00:00:02.000Z", data: { stepId: "s" } }),
    });
    const blobs = folder(objects, { "not-a-blob-name": encode("x") });
    const run = folder(objects, { events, blobs, "stray.txt": encode("?") });
    const runs = folder(objects, { r1: run });
    const root = folder(objects, { runs });
    const reads = createCommittedReads(source(objects), null, root);

    const byPath = await readRunLog(reads, "r1", { parsedEvents: null });
    const byOid = await readRunLog(noRunPaths(reads), "r1", { parsedEvents: null, runTreeOid: run });
    expect(byOid.bad.length).toBeGreaterThan(0);
    expect(byOid.problems.length).toBeGreaterThan(0);
    expect(comparable(byOid)).toEqual(comparable(byPath));
    expect(byOid.eventsOid).toBe(events);
    expect(byOid.eventsOid).toBe(await reads.treeOid("runs/r1/events"));
    // Read by path, the log is as it always was.
    expect(byPath.eventsOid).toBeUndefined();
  });

  it("tells a run folder without events/ as eventsOid null, and one whose events is a file as that file's oid", async () => {
    const objects = new Map<Oid, GitObject>();
    const empty = folder(objects, { "grants.json": encode("{}") });
    const fileEvents = folder(objects, { events: encode("not a folder") });
    const runs = folder(objects, { a: empty, b: fileEvents });
    const reads = createCommittedReads(source(objects), null, folder(objects, { runs }));
    const a = await readRunLog(noRunPaths(reads), "a", { parsedEvents: null, runTreeOid: empty });
    const b = await readRunLog(noRunPaths(reads), "b", { parsedEvents: null, runTreeOid: fileEvents });
    expect(a.eventsOid).toBeNull();
    expect(a.eventsOid).toBe(await reads.treeOid("runs/a/events"));
    expect(b.eventsOid).toBe(await reads.treeOid("runs/b/events"));
    expect(b.eventsOid).not.toBeNull();
    expect(comparable(b)).toEqual(comparable(await readRunLog(reads, "b", { parsedEvents: null })));
  });

  it("lists a tree by oid as listDir lists its folder, and refuses an oid that is not 40 hex digits", async () => {
    const objects = new Map<Oid, GitObject>();
    const sub = folder(objects, { b: encode("1"), a: encode("2"), "a-": encode("3") });
    const root = folder(objects, { sub });
    const reads = createCommittedReads(source(objects), null, root);
    expect(await reads.listTree?.(sub)).toEqual(await reads.listDir("sub"));
    await expect(reads.listTree?.("nope")).rejects.toMatchObject({ code: "object_corrupt" });
  });
});
