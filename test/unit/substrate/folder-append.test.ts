/**
 * A fire commit builds each run's two new folders (`runs/<id>` and its `events/`) straight from
 * their stored bytes (folder-append.ts) instead of through the generic tree edit. Those folders
 * must be byte for byte what the generic edit makes (same oids, so the same commits as before
 * and the same trees `git` reads), on random folders; where the direct build declines (an
 * unsorted folder, a name git refuses, a file already there), the write still gives the generic
 * edit's result.
 */
import { describe, expect, it } from "vitest";
import { createFsFromVolume, Volume } from "memfs";
import { appendToSubfolder, planAppends, subfolderOid } from "../../../src/substrate/folder-append.js";
import { applyTreeEdits } from "../../../src/substrate/tree-edit.js";
import { decodeTree, makeTree, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { Oid } from "../../../src/substrate/types.js";
import { ownAndDiffedChanges } from "../../helpers/own-and-diffed.js";
import { seededRandom } from "../../helpers/seeded-random.js";

const blobOid = (text: string): Oid => hashObject("blob", Buffer.from(text)).oid;

/** Encodes entries in the order given (so an unsorted folder can be made too). */
function rawTree(entries: readonly TreeEntry[]): { oid: Oid; content: Buffer } {
  const parts: Buffer[] = [];
  for (const e of entries) parts.push(Buffer.concat([Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex")]));
  const content = Buffer.concat(parts);
  return { oid: hashObject("tree", content).oid, content };
}

interface Case {
  readonly trees: Map<Oid, ParsedTree>;
  readonly runOid: Oid;
  readonly runContent: Buffer;
  readonly eventsContent: Buffer | null;
  readonly files: { name: string; oid: Oid }[];
  /** Nothing unusual was generated: the direct build must not decline. */
  readonly plain: boolean;
}

function randomCase(seed: number): Case {
  const r = seededRandom(seed);
  const trees = new Map<Oid, ParsedTree>();
  const keep = (raw: { oid: Oid; content: Buffer }): Oid => {
    trees.set(raw.oid, decodeTree(raw.oid, raw.content));
    return raw.oid;
  };
  let plain = true;
  const oddity = (p: number): boolean => {
    const hit = r() < p;
    if (hit) plain = false;
    return hit;
  };
  // The log: seqs from 0 or 1, dense or not, names that sort apart from their numbers (9 < 10).
  const first = r() < 0.5 ? 0 : 1;
  const count = Math.floor(r() * 14);
  const events: TreeEntry[] = [];
  for (let seq = first; seq < first + count; seq++) if (r() > 0.1) events.push({ name: `${seq}.json`, mode: "100644", oid: blobOid(`e${seed}-${seq}`), type: "blob" });
  if (oddity(0.05)) events.push({ name: ".git", mode: "100644", oid: blobOid("x"), type: "blob" });
  if (oddity(0.05)) events.push({ name: "n\u00e9.json", mode: "100644", oid: blobOid("u"), type: "blob" });
  if (r() < 0.1) events.push({ name: "notes", mode: "40000", oid: keep(rawTree([{ name: "a", mode: "100644", oid: blobOid("a"), type: "blob" }])), type: "tree" });
  if (r() < 0.1) events.push({ name: "x.json", mode: "100755", oid: blobOid("exec"), type: "blob" });
  const sortedEvents = makeTree(events.slice()).tree.entries;
  let eventsRaw: { oid: Oid; content: Buffer } | null = events.length === 0 && r() < 0.5 ? null : rawTree(oddity(0.08) ? [...sortedEvents].reverse() : sortedEvents);
  if (eventsRaw !== null && eventsRaw.content.length === 0) eventsRaw = null;
  if (eventsRaw === null) plain = false;
  // The run's folder: events/ beside other files and folders of the original layout.
  const run: TreeEntry[] = [];
  if (eventsRaw !== null) run.push({ name: "events", mode: oddity(0.05) ? "040000" : "40000", oid: keep(eventsRaw), type: "tree" });
  if (r() < 0.3) run.push({ name: "events.json", mode: "100644", oid: blobOid("beside"), type: "blob" });
  if (r() < 0.3) run.push({ name: "eventsx", mode: "40000", oid: keep(rawTree([{ name: "b", mode: "100644", oid: blobOid("b"), type: "blob" }])), type: "tree" });
  if (r() < 0.3) run.push({ name: "blobs", mode: "40000", oid: keep(rawTree([{ name: "c", mode: "100644", oid: blobOid("c"), type: "blob" }])), type: "tree" });
  if (r() < 0.2) run.push({ name: "event", mode: "100644", oid: blobOid("short"), type: "blob" });
  if (oddity(0.04)) run.push({ name: "..", mode: "100644", oid: blobOid("dots"), type: "blob" });
  const sortedRun = makeTree(run.slice()).tree.entries;
  const runRaw = rawTree(oddity(0.05) ? [...sortedRun].reverse() : sortedRun);
  keep(runRaw);
  // The new files: the next seqs, sometimes one already there.
  const files: { name: string; oid: Oid }[] = [];
  let next = first + count;
  for (let n = 0; n < 1 + Math.floor(r() * 3); n++) files.push({ name: `${next++}.json`, oid: blobOid(`new${seed}-${n}`) });
  if (events.length > 0 && oddity(0.05)) files.push({ name: (events[0] as TreeEntry).name, oid: blobOid("again") });
  if (oddity(0.03)) files.push({ name: `${next - 1}.json`, oid: blobOid("twice") });
  return { trees, runOid: runRaw.oid, runContent: runRaw.content, eventsContent: eventsRaw?.content ?? null, files, plain };
}

describe("a run's folders built from their bytes (folder-append.ts)", () => {
  it("are byte for byte the generic tree edit's, on random folders", async () => {
    let direct = 0;
    for (let seed = 1; seed <= 600; seed++) {
      const c = randomCase(seed);
      const read = async (oid: Oid): Promise<ParsedTree> => {
        const tree = c.trees.get(oid);
        if (tree === undefined) throw new Error(`no tree ${oid}`);
        return tree;
      };
      const subOid = subfolderOid(c.runContent, "events");
      const built = subOid === null || c.eventsContent === null ? null : appendToSubfolder(c.runContent, "events", c.eventsContent, c.files);
      if (c.plain) expect(built, `seed ${seed}`).not.toBeNull();
      if (built === null) continue;
      direct += 1;
      const generic = await applyTreeEdits(read, c.runOid, { puts: c.files.map((f) => ({ path: ["events", f.name], oid: f.oid })) });
      expect(built.folder.oid, `seed ${seed}`).toBe(generic.rootOid);
      expect(built.sub.oid, `seed ${seed}`).toBe(generic.folders.get("events"));
      const byOid = new Map(generic.newTrees.map((o) => [o.oid, o]));
      expect(Buffer.from(built.folder.content).equals(Buffer.from(byOid.get(built.folder.oid)?.content ?? [])), `seed ${seed}`).toBe(true);
      expect(Buffer.from(built.sub.content).equals(Buffer.from(byOid.get(built.sub.oid)?.content ?? [])), `seed ${seed}`).toBe(true);
      expect(hashObject("tree", built.sub.content).oid).toBe(built.sub.oid);
    }
    // The common shape is the direct path's: most cases must have taken it.
    expect(direct).toBeGreaterThan(300);
  });

  it("declines what the generic edit would change otherwise: refused names, unsorted folders, a file already there", () => {
    const e1 = { name: "1.json", mode: "100644", oid: blobOid("1"), type: "blob" } as const;
    const e2 = { name: "2.json", mode: "100644", oid: blobOid("2"), type: "blob" } as const;
    const events = rawTree([e1, e2]);
    const run = rawTree([{ name: "events", mode: "40000", oid: events.oid, type: "tree" }]);
    expect(appendToSubfolder(run.content, "events", events.content, [{ name: "3.json", oid: blobOid("3") }])).not.toBeNull();
    expect(appendToSubfolder(run.content, "events", events.content, [{ name: "2.json", oid: blobOid("3") }])).toBeNull();
    expect(appendToSubfolder(run.content, "events", rawTree([e2, e1]).content, [{ name: "3.json", oid: blobOid("3") }])).toBeNull();
    expect(appendToSubfolder(run.content, "events", events.content, [{ name: ".git", oid: blobOid("3") }])).toBeNull();
    expect(appendToSubfolder(run.content, "events", events.content, [{ name: "a/b", oid: blobOid("3") }])).toBeNull();
    const padded = rawTree([{ name: "events", mode: "040000", oid: events.oid, type: "tree" }]);
    expect(subfolderOid(padded.content, "events")).toBeNull();
    expect(subfolderOid(run.content, "blobs")).toBeNull();
    expect(subfolderOid(run.content, "events")).toBe(events.oid);
  });
});

describe("a write with appends", () => {
  it("hands its own subscribers exactly the changes another process diffs", async () => {
    const files = (n: number[]) => n.map((s) => ({ name: `${s}.json`, content: Buffer.from(`x${s}`) }));
    const { own, seen } = await ownAndDiffedChanges(
      (writer, rid) =>
        writer
          .writeTreeDelta(null, rid, "main", {
            message: "append",
            prevalidated: true,
            computeDelta: () => ({ puts: new Map([["runs/c/events/1.json", "c"]]), appends: [{ folder: "runs/b", sub: "events", files: files([3, 10]) }, { folder: "runs/a", sub: "events", files: files([2]) }] }),
          })
          .then(() => undefined),
      1,
      (writer, rid) => writer.writeTree(null, rid, "main", { files: { "runs/a/events/1.json": "1", "runs/b/events/1.json": "1", "runs/b/events/2.json": "2" }, message: "base" }).then(() => undefined),
    );
    expect(own.length).toBe(1);
    expect(own).toEqual(seen);
    expect(own[0]?.changes.map((c) => c.path)).toEqual(["runs/a/events/2.json", "runs/b/events/10.json", "runs/b/events/3.json", "runs/c/events/1.json"]);
  });

  it("commits the same trees as the same files written as puts, and says where its folders went", async () => {
    for (let seed = 1; seed <= 12; seed++) {
      const r = seededRandom(seed);
      const roots: Oid[] = [];
      const folderOids: (Oid | null | undefined)[][] = [];
      const runs = 6;
      const appendRuns = [0, 2, 3, 5].filter(() => r() < 0.8);
      const extra = r() < 0.5;
      for (const mode of ["puts", "appends"] as const) {
        const store = createRepoStore({ dataDir: "/data", fs: createFsFromVolume(new Volume()), kindHandlers: [{ kind: "k", directoryPrefix: "k" }], authorize: allowAll, watch: false });
        const rid = { kind: "k", id: "r" };
        await store.initRepo(null, rid);
        const base: Record<string, string> = { "top.txt": "top" };
        for (let i = 0; i < runs; i++) {
          for (let s = 1; s <= 3 + i; s++) base[`runs/run-${i}/events/${s}.json`] = `e-${seed}-${i}-${s}`;
          if (i === 3) base[`runs/run-${i}/blobs/x`] = "x";
        }
        await store.writeTree(null, rid, "main", { files: base, message: "base" });
        // The events folders' oids as hints (run-3's folder holds more than its events folder;
        // run-5's hint is wrong): what rests on them is checked.
        const before = await store.openCommittedReads(null, rid, "main");
        const hints = new Map<number, Oid>();
        for (const i of appendRuns) hints.set(i, i === 5 ? blobOid("not it") : ((await before.treeOid(`runs/run-${i}/events`)) as Oid));
        const files = (i: number): { name: string; content: Uint8Array }[] => [4 + i, 5 + i].map((s) => ({ name: `${s}.json`, content: Buffer.from(`new-${seed}-${i}-${s}`) }));
        const result = await store.writeTreeDelta(null, rid, "main", {
          message: "append",
          prevalidated: true,
          computeDelta: () => {
            const puts = new Map<string, Uint8Array>();
            if (extra) puts.set("runs/run-1/events/99.json", Buffer.from("plain put"));
            if (mode === "puts") {
              for (const i of appendRuns) for (const f of files(i)) puts.set(`runs/run-${i}/events/${f.name}`, f.content);
              return { puts };
            }
            return { puts, appends: appendRuns.map((i) => ({ folder: `runs/run-${i}`, sub: "events", files: files(i), ...(r() < 0.7 ? { subOid: hints.get(i) as Oid } : {}) })) };
          },
        });
        const reads = await store.openCommittedReads(null, rid, result.commitSha as string);
        roots.push((await reads.treeOid("")) as Oid);
        folderOids.push(appendRuns.flatMap((i) => [result.folderOid?.(`runs/run-${i}`), result.folderOid?.(`runs/run-${i}/events`)]));
        for (const i of appendRuns) {
          expect(result.folderOid?.(`runs/run-${i}`)).toBe(await reads.treeOid(`runs/run-${i}`));
          expect(result.folderOid?.(`runs/run-${i}/events`)).toBe(await reads.treeOid(`runs/run-${i}/events`));
          expect(Buffer.from((await reads.readBlob(`runs/run-${i}/events/${5 + i}.json`)) ?? []).toString()).toBe(`new-${seed}-${i}-${5 + i}`);
        }
        // The same oids by position, per append in the order given (every one of these is built directly).
        if (mode === "appends") {
          expect(result.appended).toHaveLength(appendRuns.length);
          for (const [k, i] of appendRuns.entries()) {
            const last = files(i).at(-1)?.name as string;
            expect(result.appended?.[k], `seed ${seed} run ${i}`).toEqual({ folder: await reads.treeOid(`runs/run-${i}`), sub: await reads.treeOid(`runs/run-${i}/events`), last: await reads.treeOid(`runs/run-${i}/events/${last}`) });
          }
        }
        await store.close();
      }
      expect(roots[1], `seed ${seed}`).toBe(roots[0]);
      expect(folderOids[1], `seed ${seed}`).toEqual(folderOids[0]);
    }
  });
});

describe("appends' folder paths", () => {
  it("are checked as puts' paths are, also the ones after the first under the same parent", async () => {
    const store = createRepoStore({ dataDir: "/data", fs: createFsFromVolume(new Volume()), kindHandlers: [{ kind: "k", directoryPrefix: "k" }], authorize: allowAll, watch: false });
    const rid = { kind: "k", id: "r" };
    await store.initRepo(null, rid);
    await store.writeTree(null, rid, "main", { files: { "runs/run-0/events/1.json": "a", "runs/run-1/events/1.json": "b" }, message: "base" });
    const file = [{ name: "2.json", content: Buffer.from("new") }];
    for (const bad of ["runs/.git", "runs/..", "runs/.", "runs/GIT~1", "runs/.Git.", "runs/a\\b", "runs/", "runs//x"]) {
      const write = store.writeTreeDelta(null, rid, "main", {
        message: "append",
        prevalidated: true,
        computeDelta: () => Promise.resolve({ appends: [{ folder: "runs/run-0", sub: "events", files: file }, { folder: bad, sub: "events", files: file }] }),
      });
      await expect(write, bad).rejects.toMatchObject({ code: "path_violation" });
    }
    // A folder under another parent after them is looked up from its own.
    const ok = await store.writeTreeDelta(null, rid, "main", {
      message: "append",
      prevalidated: true,
      computeDelta: () => Promise.resolve({ appends: [{ folder: "runs/run-0", sub: "events", files: file }, { folder: "runs/run-1", sub: "events", files: file }, { folder: "docs/notes", sub: "events", files: file }] }),
    });
    const reads = await store.openCommittedReads(null, rid, ok.commitSha as string);
    expect(Buffer.from((await reads.readBlob("runs/run-1/events/2.json")) ?? []).toString()).toBe("new");
    expect(Buffer.from((await reads.readBlob("docs/notes/events/2.json")) ?? []).toString()).toBe("new");
    await store.close();
  });
});

describe("a built folder's position hint (TreeEdits.puts at)", () => {
  it("is taken only for the very folder and name it was found at; a wrong one changes nothing", async () => {
    const runs = makeTree(Array.from({ length: 50 }, (_, i) => ({ name: `run-${String(i).padStart(2, "0")}`, mode: "40000", oid: blobOid(`run ${i}`), type: "tree" as const })));
    const other = makeTree([{ name: "x", mode: "100644", oid: blobOid("x"), type: "blob" }]);
    const root = makeTree([{ name: "runs", mode: "40000", oid: runs.tree.oid, type: "tree" }]);
    const trees = new Map<Oid, ParsedTree>([runs.tree, other.tree, root.tree].map((t) => [t.oid, t]));
    const read = (oid: Oid): Promise<ParsedTree> => Promise.resolve(trees.get(oid) as ParsedTree);
    const put = (at?: { tree: Oid; index: number }) => [
      { path: ["runs", "run-07"], oid: blobOid("new 7"), within: [{ path: "runs/run-07/events/2.json", oid: blobOid("e"), status: "added" as const }], ...(at === undefined ? {} : { at }) },
      { path: ["runs", "run-31"], oid: blobOid("new 31"), within: [] },
    ];
    const plain = await applyTreeEdits(read, root.tree.oid, { puts: put() });
    for (const at of [{ tree: runs.tree.oid, index: 7 }, { tree: runs.tree.oid, index: 8 }, { tree: runs.tree.oid, index: 99 }, { tree: other.tree.oid, index: 8 }]) {
      const hinted = await applyTreeEdits(read, root.tree.oid, { puts: put(at) });
      expect(hinted.rootOid, JSON.stringify(at)).toBe(plain.rootOid);
      expect(hinted.changes).toEqual(plain.changes);
    }
  });
});

describe("a big subfolder with a pause given", () => {
  it("is built in steps, the pause awaited inside the one append, into the folders the direct build makes", async () => {
    const events: TreeEntry[] = [];
    for (let seq = 1; seq <= 20_000; seq++) events.push({ name: `${seq}.json`, mode: "100644", oid: blobOid(`big-${seq}`), type: "blob" });
    events.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const eventsRaw = rawTree(events);
    const runRaw = rawTree([{ name: "events", mode: "40000", oid: eventsRaw.oid, type: "tree" }, { name: "grants.json", mode: "100644", oid: blobOid("g"), type: "blob" }]);
    const runsRaw = rawTree([{ name: "r", mode: "40000", oid: runRaw.oid, type: "tree" }]);
    const rootRaw = rawTree([{ name: "runs", mode: "40000", oid: runsRaw.oid, type: "tree" }]);
    const raw = new Map([eventsRaw, runRaw, runsRaw, rootRaw].map((t) => [t.oid, t.content]));
    const source = {
      readTree: (oid: Oid) => Promise.resolve(decodeTree(oid, raw.get(oid) as Buffer)),
      readRaw: (oid: Oid) => ({ oid, type: "tree" as const, content: raw.get(oid) as Buffer }),
    };
    const files = [{ name: "20001.json", content: Buffer.from("a") }, { name: "20002.json", content: Buffer.from("b") }];
    let turns = 0;
    let spinning = true;
    const spin = (): void => {
      if (!spinning) return;
      turns += 1;
      setImmediate(spin);
    };
    setImmediate(spin);
    let paused = 0;
    const plan = await planAppends(source, rootRaw.oid, [{ folder: "runs/r", sub: "events", files }], () => {
      paused += 1;
      return new Promise<void>((resolve) => setImmediate(resolve));
    });
    spinning = false;
    expect(paused).toBeGreaterThan(1);
    expect(turns).toBeGreaterThan(1);
    expect(plan.puts).toEqual([]);
    const direct = appendToSubfolder(runRaw.content, "events", eventsRaw.content, files.map((f) => ({ name: f.name, oid: hashObject("blob", f.content).oid })));
    expect(direct).not.toBeNull();
    expect(plan.built[0]).toEqual({ folder: direct?.folder.oid, sub: direct?.sub.oid, last: hashObject("blob", Buffer.from("b")).oid });
    const sub = plan.objects.find((o) => o.oid === direct?.sub.oid);
    expect(Buffer.compare(Buffer.from(sub?.content ?? []), Buffer.from(direct?.sub.content ?? []))).toBe(0);
    expect(hashObject("tree", sub?.content ?? new Uint8Array()).oid).toBe(direct?.sub.oid);
  });
});
