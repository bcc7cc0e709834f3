/**
 * Property: on random run folders (names stored twice, `events` as a file, folder, symlink or
 * gitlink, odd modes, names that are not seqs, bad JSON, any order), a log read by the run
 * folder's oid, its folders listed from their stored bytes (`dirEntriesOfTreeBytes`, as the
 * object store's `listTree` lists them), equals the log read by path, problems included, and
 * tells the `events` oid `treeOid` answers.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createCommittedReads, type ObjectSource } from "../../../src/substrate/committed-reads.js";
import { type GitObject, hashObject } from "../../../src/substrate/git-object.js";
import { dirEntriesOfTreeBytes } from "../../../src/substrate/tree-bytes.js";
import { decodeTree } from "../../../src/substrate/tree-object.js";
import type { Oid } from "../../../src/substrate/types.js";
import { readRunLog, type RunLog } from "../../../src/workflow/run-log.js";

type Node = { readonly kind: "file"; readonly mode: string; readonly text: string } | { readonly kind: "folder"; readonly mode: string; readonly entries: readonly (readonly [string, Node])[] } | { readonly kind: "gitlink" };

const eventText = fc.oneof(
  fc.constantFrom("{not json", "{}", "\u00ff"),
  fc.record({ seq: fc.integer({ min: 0, max: 5 }), timer: fc.constantFrom("a", "b") }).map(({ seq, timer }) =>
    seq === 1
      ? JSON.stringify({ seq, type: "WorkflowStarted", at: "2026-01-01T00:00:00.000Z", data: { workflow: "w" } })
      : JSON.stringify({ seq, type: "TimerSet", at: "2026-01-01T00:00:01.000Z", data: { timerId: timer, fireAt: "2026-01-02T00:00:00.000Z" } }),
  ),
);
const eventName = fc.oneof(fc.constantFrom("1.json", "2.json", "3.json", "4.json", "01.json", "x.json", "2", "events", "a-"), fc.integer({ min: 0, max: 6 }).map((n) => `${n}.json`));
const fileMode = fc.constantFrom("100644", "100644", "100644", "100755", "120000", "100664");
const eventsFolder: fc.Arbitrary<Node> = fc
  .array(fc.tuple(eventName, fc.oneof({ weight: 6, arbitrary: fc.record({ kind: fc.constant("file" as const), mode: fileMode, text: eventText }) }, { weight: 1, arbitrary: fc.constant({ kind: "gitlink" as const }) }, { weight: 1, arbitrary: fc.constant({ kind: "folder" as const, mode: "40000", entries: [] }) })), { maxLength: 6 })
  .map((entries) => ({ kind: "folder" as const, mode: "40000", entries }));
const runEntryName = fc.constantFrom("events", "events", "events", "blobs", "grants.json", "events.jsonl", "stray", "events-1", "parts");
const runFolder: fc.Arbitrary<Node> = fc
  .array(
    fc.tuple(
      runEntryName,
      fc.oneof(
        { weight: 4, arbitrary: eventsFolder.chain((f) => fc.constantFrom("40000", "040000").map((mode) => ({ ...f, mode }) as Node)) },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant("file" as const), mode: fileMode, text: eventText }) },
        { weight: 1, arbitrary: fc.constant({ kind: "gitlink" as const }) },
      ),
    ),
    { maxLength: 5 },
  )
  .map((entries) => ({ kind: "folder" as const, mode: "40000", entries }));

/** Writes `node` into `objects` (a folder's entries as listed: any order, duplicates kept); returns its oid. */
function write(objects: Map<Oid, GitObject>, node: Node): Oid {
  if (node.kind === "gitlink") return "5".repeat(40);
  if (node.kind === "file") {
    const blob = hashObject("blob", new TextEncoder().encode(node.text));
    objects.set(blob.oid, blob);
    return blob.oid;
  }
  const parts = node.entries.map(([name, child]) => {
    const oid = write(objects, child);
    const mode = child.kind === "gitlink" ? "160000" : child.mode;
    return Buffer.concat([Buffer.from(`${mode} ${name}\0`, "utf8"), Buffer.from(oid, "hex")]);
  });
  const tree = hashObject("tree", Buffer.concat(parts));
  objects.set(tree.oid, tree);
  return tree.oid;
}

/** Also sorts a folder's entries in git's order when `sorted` (what git itself would store). */
function sortedNode(node: Node): Node {
  if (node.kind !== "folder") return node;
  const key = ([name, child]: readonly [string, Node]): Buffer => Buffer.from(child.kind === "folder" ? `${name}/` : name, "utf8");
  return { ...node, entries: [...node.entries].map(([n, c]) => [n, sortedNode(c)] as const).sort((a, b) => Buffer.compare(key(a), key(b))) };
}

function source(objects: Map<Oid, GitObject>): ObjectSource {
  const get = (oid: Oid): GitObject => {
    const object = objects.get(oid);
    if (object === undefined) throw Object.assign(new Error(`no ${oid}`), { code: "object_corrupt" });
    return object;
  };
  return {
    async readTree(oid) {
      const object = get(oid);
      if (object.type !== "tree") throw Object.assign(new Error(`${oid} is a ${object.type}`), { code: "object_corrupt" });
      return decodeTree(oid, object.content);
    },
    async listTree(oid) {
      const object = get(oid);
      if (object.type !== "tree") throw Object.assign(new Error(`${oid} is a ${object.type}`), { code: "object_corrupt" });
      return dirEntriesOfTreeBytes(oid, object.content);
    },
    async readBlob(oid) {
      return get(oid).content;
    },
  };
}

const comparable = (log: RunLog): unknown => ({
  ...log,
  eventsOid: undefined,
  lastEventOid: undefined,
  bad: log.bad.map((b) => [b.path, b.seq, b.error.code, b.error.message]),
  problems: log.problems.map((p) => [p.path, p.seq, p.error.code, p.error.message]),
});

async function outcome(read: () => Promise<RunLog>): Promise<unknown> {
  try {
    return { ok: comparable(await read()) };
  } catch (error) {
    return { error: (error as { code?: string }).code ?? "no code" };
  }
}

describe("readRunLog by oid against by path, on random run folders", () => {
  it("reads the same log and tells the events oid treeOid answers", async () => {
    await fc.assert(
      fc.asyncProperty(runFolder, fc.boolean(), async (run, sorted) => {
        const objects = new Map<Oid, GitObject>();
        const runOid = write(objects, sorted ? sortedNode(run) : run);
        const runs = hashObject("tree", Buffer.concat([Buffer.from("40000 r1\0", "utf8"), Buffer.from(runOid, "hex")]));
        objects.set(runs.oid, runs);
        const root = hashObject("tree", Buffer.concat([Buffer.from("40000 runs\0", "utf8"), Buffer.from(runs.oid, "hex")]));
        objects.set(root.oid, root);
        const reads = createCommittedReads(source(objects), null, root.oid);
        const byPath = await outcome(() => readRunLog(reads, "r1", { parsedEvents: null }));
        let eventsOid: string | null | undefined;
        const byOid = await outcome(async () => {
          const log = await readRunLog(reads, "r1", { parsedEvents: null, runTreeOid: runOid });
          eventsOid = log.eventsOid;
          return log;
        });
        expect(byOid).toEqual(byPath);
        if (eventsOid !== undefined) expect(eventsOid).toBe(await reads.treeOid("runs/r1/events"));
      }),
      { numRuns: 400, seed: 47 },
    );
  });
});
