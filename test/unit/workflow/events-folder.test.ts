/**
 * A run's `events/` read from the folder's stored bytes: a page and a summary that only grew
 * index the folder without listing it (no object per entry), in slices that give the event loop
 * turns; a page agrees with the full read about the run's end.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeTree, dirEntriesOf } from "../../../src/substrate/tree-object.js";
import { indexTreeBytes, walkTreeBytes } from "../../../src/substrate/tree-bytes.js";
import type { CommittedReads, Oid } from "../../../src/substrate/types.js";
import { memoryCommits } from "../../helpers/memory-commits.js";
import { fromEntries, indexEventsFolder, openEventsFolder } from "../../../src/workflow/events-folder.js";
import { parseEventPathName } from "../../../src/workflow/paths.js";
import { readRunLog, readRunLogFromFiles, readRunLogPage } from "../../../src/workflow/run-log.js";
import { RunSummaryCache, sharedRunSummaries, summarizeRunLog } from "../../../src/workflow/run-log-summary.js";

/** Reads of a new commit holding `files` (each in a repo of its own, in one memory store). */
const commitOf = memoryCommits();

/** What a reader asked of the reads: folders listed, trees read as bytes, blobs read. */
interface Asked {
  listed: string[];
  treeBytes: Oid[];
  blobs: Oid[];
}

function counting(reads: CommittedReads, asked: Asked): CommittedReads {
  const { readTreeBytes } = reads;
  if (readTreeBytes === undefined) throw new Error("the store's reads give no tree bytes");
  return {
    commitSha: reads.commitSha,
    listDir: async (path) => {
      asked.listed.push(path);
      return reads.listDir(path);
    },
    readBlob: (path) => reads.readBlob(path),
    readBlobByOid: async (oid) => {
      asked.blobs.push(oid);
      return reads.readBlobByOid(oid);
    },
    readBlobsByOid: async (oids) => {
      asked.blobs.push(...oids);
      return Promise.all(oids.map((oid) => reads.readBlobByOid(oid)));
    },
    treeOid: (path) => reads.treeOid(path),
    readTreeBytes: async (oid) => {
      asked.treeBytes.push(oid);
      return readTreeBytes(oid);
    },
  };
}

const asked = (): Asked => ({ listed: [], treeBytes: [], blobs: [] });
const step = (seq: number): object => ({ seq, type: "StepStarted", n: seq });

describe("a run's events/ from its stored bytes", () => {
  it("folds appended events without listing events/, reading only the new blobs", async () => {
    const files: Record<string, string | object> = {};
    for (let seq = 1; seq <= 120; seq += 1) files[`runs/r/events/${seq}.json`] = step(seq);
    files["runs/r/events/3.json"] = { seq: 3, type: "SignalReceived", signalName: "go", signalId: "s-1", payload: null, at: "2026-05-01T00:00:00.000Z" };
    const summaries = new RunSummaryCache();
    await summarizeRunLog(await commitOf(files), "r", { parsedEvents: null, summaries });

    files["runs/r/events/121.json"] = { seq: 121, type: "SignalConsumed", data: { signalId: "s-1" } };
    files["runs/r/events/122.json"] = step(122);
    const grown = await commitOf(files);
    const seen = asked();
    const summary = await summarizeRunLog(counting(grown, seen), "r", { parsedEvents: null, summaries });
    expect(seen.listed).not.toContain("runs/r/events");
    expect(seen.treeBytes).toEqual([await grown.treeOid("runs/r/events")]);
    expect(seen.blobs).toHaveLength(2);
    expect(summary).toEqual(await summarizeRunLog(grown, "r", { parsedEvents: null, summaries: null }));
    expect([summary.eventCount, summary.state.unconsumedSignals]).toEqual([122, []]);
  });

  it("pages a log without listing events/, the same events as the full read, bad names and folders reported", async () => {
    const files: Record<string, string | object> = {};
    for (let seq = 1; seq <= 30; seq += 1) files[`runs/p/events/${seq}.json`] = step(seq);
    files["runs/p/events/12.json"] = '{"type":"StepStarted",}';
    files["runs/p/events/note.txt"] = "x";
    files["runs/p/events/31.json/x"] = "a folder where an event should be";
    const reads = await commitOf(files);
    const seen = asked();
    const counted = counting(reads, seen);
    const pages = [];
    for (let after: number | null = -1; after !== null; ) {
      const page = await readRunLogPage(counted, "p", { after, limit: 7, parsedEvents: null });
      pages.push(page);
      after = page.nextAfter;
    }
    expect(seen.listed).not.toContain("runs/p/events");
    const full = await readRunLog(reads, "p", { parsedEvents: null });
    expect(pages.flatMap((p) => p.events)).toEqual(full.events);
    expect(pages.flatMap((p) => p.bad.map((b) => b.path))).toEqual(["runs/p/events/12.json", "runs/p/events/31.json"]);
    const summary = await summarizeRunLog(counted, "p", { parsedEvents: null, summaries: null });
    expect([summary.eventCount, summary.badCount, summary.bad.map((b) => b.path).sort()]).toEqual([full.events.length, full.bad.length, full.bad.map((b) => b.path).sort()]);
  });

  it("walks a folder's entries in stored order, pausing every slice", async () => {
    const files: Record<string, string> = {};
    for (let seq = 1; seq <= 95; seq += 1) files[`runs/w/events/${seq}.json`] = `{"seq":${seq}}`;
    const reads = await commitOf(files);
    const oid = (await reads.treeOid("runs/w/events")) as Oid;
    const content = (await reads.readTreeBytes?.(oid)) as Uint8Array;
    const names: string[] = [];
    let pauses = 0;
    const whole = await walkTreeBytes(content, (_start, name, nul) => names.push(Buffer.from(content.subarray(name, nul)).toString("utf8")), {
      sliceEntries: 10,
      pause: async () => {
        pauses += 1;
      },
    });
    expect(whole).toBe(true);
    expect(names).toEqual(dirEntriesOf(decodeTree(oid, content)).map((e) => e.name).sort());
    expect(names).toHaveLength(95);
    expect(pauses).toBe(9);
    expect(await walkTreeBytes(content.subarray(0, content.byteLength - 3), () => undefined)).toBe(false);
  });
});

describe("a page past the run's end", () => {
  it("holds no entry after the terminal event, as the full read leaves them out, whatever the cursor", async () => {
    const reads = await commitOf({
      "runs/g/events/1.json": step(1),
      "runs/g/events/2.json": { seq: 2, type: "RunCompleted" },
      "runs/g/events/3.json": step(3),
      "runs/g/events/4.json": step(4),
      "runs/g/events/5.json": step(5),
    });
    expect((await readRunLog(reads, "g")).events.map((e) => e.seq)).toEqual([1, 2]);
    for (const after of [2, 3, 4]) {
      const page = await readRunLogPage(reads, "g", { after, limit: 2 });
      expect([page.events, page.bad, page.nextAfter]).toEqual([[], [], null]);
      expect(page.problems.map((p) => [p.seq, p.error.code])).toEqual([3, 4, 5].filter((s) => s > after).slice(0, 2).map((s) => [s, "event_invalid"]));
    }
    const first = await readRunLogPage(reads, "g", { limit: 10 });
    expect([first.events.map((e) => e.seq), first.problems.map((p) => p.seq), first.nextAfter]).toEqual([[1, 2], [3, 4, 5], null]);
  });
});

describe("an events/ folder indexed from its bytes", () => {
  const name = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 400 }).map((n) => `${n}.json`) },
    { weight: 1, arbitrary: fc.constantFrom("007.json", "1.JSON", ".json", "a", "a-b", "x.json", "12345678901234567.json", "\u00e9.json", "9007199254740993.json") },
  );
  it("gives what the listing gives: seqs in order, the same entries, names that are not seqs by name, and the same only-grew answers", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.record({ name, folder: fc.boolean() }), { minLength: 1, maxLength: 40, selector: (e) => e.name }), fc.integer({ min: -1, max: 400 }), async (entries, maxSeq) => {
        const files: Record<string, string> = {};
        for (const e of entries) files[e.folder ? `runs/f/events/${e.name}/x` : `runs/f/events/${e.name}`] = `{"n":"${e.name}"}`;
        const reads = await commitOf(files);
        const oid = await reads.treeOid("runs/f/events");
        const bytes = await openEventsFolder(reads, "runs/f/events", oid);
        const listed = fromEntries(await reads.listDir("runs/f/events"));
        expect(Array.from(bytes.seqs)).toEqual(Array.from(listed.seqs));
        expect(Array.from(bytes.at, (h) => bytes.entry(h))).toEqual(Array.from(listed.at, (h) => listed.entry(h)));
        expect(bytes.others.map((h) => bytes.entry(h))).toEqual(listed.others.map((h) => listed.entry(h)));
        // The folder less its names above maxSeq, committed on its own: both say it only grew from it.
        const kept: Record<string, string> = {};
        for (const [path, body] of Object.entries(files)) {
          const seq = parseEventPathName(path.slice("runs/f/events/".length).replace(/\/x$/, ""));
          if (seq === null || seq <= maxSeq) kept[path] = body;
        }
        kept["runs/f/other"] = "so the run folder never goes away";
        const before = await (await commitOf(kept)).treeOid("runs/f/events");
        if (before !== null) {
          expect(await bytes.onlyAddedAbove(maxSeq, before)).toBe(true);
          expect(await listed.onlyAddedAbove(maxSeq, before)).toBe(true);
        }
        if (oid !== null && bytes.seqs.length > 0 && (bytes.seqs[0] as number) > maxSeq) {
          expect(await bytes.onlyAddedAbove(maxSeq, oid)).toBe(false);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("readRunLog of a long log", () => {
  /** A log of `n` events with a bad file, a gap, a schedule event the controls never write and events after its end. */
  function longLog(n: number): Record<string, string | object> {
    const files: Record<string, string | object> = {};
    for (let seq = 1; seq <= n; seq += 1) files[`runs/l/events/${seq}.json`] = step(seq);
    files["runs/l/events/2.json"] = { seq: 2, type: "TimerSet", data: { timerId: "c", fireAt: "2026-05-01T10:00:00.000Z", cron: "*/5 * * * *" } };
    files["runs/l/events/40.json"] = { seq: 40, type: "ScheduleResumed", data: { timerId: "c" } };
    files["runs/l/events/77.json"] = '{"type":"StepStarted",}';
    delete files["runs/l/events/1234.json"];
    files[`runs/l/events/${n - 2}.json`] = { seq: n - 2, type: "RunCompleted" };
    return files;
  }

  it("gives the event loop turns while it reads and folds, and what a read of the files in one piece gives", async () => {
    const files = longLog(6_000);
    const reads = await commitOf(files);
    let turns = 0;
    let ticking = true;
    const tick = (): void => {
      turns += 1;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const log = await readRunLog(reads, "l", { parsedEvents: null });
    ticking = false;
    // One turn at least between two slices of 2,048 entries, reading and folding.
    expect(turns).toBeGreaterThanOrEqual(4);
    const bytes = new Map<string, Uint8Array>();
    for (const [path, body] of Object.entries(files)) bytes.set(path.slice("runs/l/events/".length), Buffer.from(typeof body === "string" ? body : JSON.stringify(body)));
    const whole = readRunLogFromFiles("l", bytes, { parsedEvents: null });
    expect(log).toEqual(whole);
    // Through reads that give no tree bytes: the listing, in slices too.
    const listingOnly: CommittedReads = { ...reads, readTreeBytes: undefined } as unknown as CommittedReads;
    delete (listingOnly as { readTreeBytes?: unknown }).readTreeBytes;
    expect(await readRunLog(listingOnly, "l", { parsedEvents: null })).toEqual(whole);
    expect([log.events.length, log.bad.length, log.problems.map((p) => p.seq)]).toEqual([6_000 - 1 - 1 - 1 - 2, 1, [40, 1234, 5_999, 6_000]]);
  });
});

describe("an events/ folder with a name stored twice (a foreign tree)", () => {
  const sha = (type: string, b: Buffer): Oid => createHash("sha1").update(`${type} ${b.length}\0`).update(b).digest("hex") as Oid;
  const treeOf = (entries: [string, string, Oid][]): { content: Buffer; oid: Oid } => {
    const content = Buffer.concat(entries.map(([mode, name, oid]) => Buffer.concat([Buffer.from(`${mode} ${name}\0`), Buffer.from(oid, "hex")])));
    return { content, oid: sha("tree", content) };
  };
  /** Reads of a commit whose run `r` holds `names` in `events/`, in this stored order (names may repeat). */
  function readsOf(names: [string, object][]): CommittedReads {
    const blobs = new Map<string, Buffer>();
    const entries: [string, string, Oid][] = names.map(([name, body]) => {
      const bytes = Buffer.from(JSON.stringify(body));
      const oid = sha("blob", bytes);
      blobs.set(oid, bytes);
      return ["100644", name, oid];
    });
    const events = treeOf(entries);
    const run = treeOf([["40000", "events", events.oid]]);
    const trees = new Map([
      [events.oid, events.content],
      [run.oid, run.content],
    ]);
    const listing = (oid: Oid) => dirEntriesOf(decodeTree(oid, trees.get(oid) as Buffer));
    const oids: Record<string, Oid> = { "runs/r/events": events.oid, "runs/r": run.oid };
    return {
      commitSha: "c".repeat(40),
      listDir: async (path) => (oids[path] === undefined ? (path === "runs" ? [{ name: "r", type: "tree", oid: run.oid }] : []) : listing(oids[path] as Oid)),
      readBlob: async () => null,
      readBlobByOid: async (oid) => blobs.get(oid) as Buffer,
      treeOid: async (path) => oids[path] ?? null,
      readTreeBytes: async (oid) => trees.get(oid) ?? null,
    };
  }

  // Seqs close together are placed by value, seqs far apart sorted: both must keep every entry.
  for (const [label, far] of [
    ["dense", 2],
    ["spread", 1000],
  ] as const) {
    it(`keeps both entries in pages and the summary, as readRunLog does (${label} seqs)`, async () => {
      const reads = readsOf([
        ["0.json", step(0)],
        ["1.json", step(1)],
        [`${far}.json`, { ...step(far), copy: 1 }],
        [`${far}.json`, { ...step(far), copy: 2 }],
      ]);
      const full = await readRunLog(reads, "r", { parsedEvents: null });
      expect(full.events.map((e) => e.seq)).toEqual([0, 1, far, far]);
      const page = await readRunLogPage(reads, "r", { limit: 10, parsedEvents: null });
      expect(page.events).toEqual(full.events);
      const summary = await summarizeRunLog(reads, "r", { summaries: null, parsedEvents: null });
      expect([summary.eventCount, summary.state.lastSeq]).toEqual([full.events.length, full.state.lastSeq]);
    });
  }
});

describe("a kept summary across versions of a log", () => {
  type Op = { op: "append" | "end" | "odd" | "far"; n: number } | { op: "rewrite" | "remove"; at: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant("append" as const), n: fc.integer({ min: 1, max: 3 }) }),
    fc.record({ op: fc.constant("rewrite" as const), at: fc.integer({ min: 1, max: 12 }) }),
    fc.record({ op: fc.constant("remove" as const), at: fc.integer({ min: 1, max: 12 }) }),
    fc.record({ op: fc.constant("end" as const), n: fc.constant(1) }),
    fc.record({ op: fc.constant("odd" as const), n: fc.constant(1) }),
    fc.record({ op: fc.constant("far" as const), n: fc.integer({ min: 50, max: 60 }) }),
  );
  it("never answers for a log that was rewritten, cut or ended since: summaries and pages are the fresh fold's", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
        sharedRunSummaries.clear();
        const files: Record<string, string | object> = { "runs/r/events/1.json": step(1) };
        let max = 1;
        for (const [v, o] of ops.entries()) {
          if (o.op === "append") for (let i = 0; i < o.n; i += 1) files[`runs/r/events/${++max}.json`] = { ...step(max), v };
          else if (o.op === "end") files[`runs/r/events/${++max}.json`] = { seq: max, type: "RunCompleted" };
          else if (o.op === "odd") files[`runs/r/events/x${v}.json`] = "{}";
          else if (o.op === "far") files[`runs/r/events/${(max = Math.max(max, o.n), o.n)}.json`] = step(o.n);
          else if (o.op === "remove") delete files[`runs/r/events/${o.at}.json`];
          else if (o.op === "rewrite" && files[`runs/r/events/${o.at}.json`] !== undefined) files[`runs/r/events/${o.at}.json`] = o.at % 2 === 0 ? { seq: o.at, type: "RunCompleted", v } : { ...step(o.at), v };
          files["runs/r/events/0.json"] = step(0);
          const reads = await commitOf({ ...files });
          const fresh = await summarizeRunLog(reads, "r", { summaries: null });
          expect(JSON.stringify(await summarizeRunLog(reads, "r"))).toEqual(JSON.stringify(fresh));
          for (let after = -1; after <= max + 1; after += 1) {
            const kept = await readRunLogPage(reads, "r", { after, limit: 3 });
            expect(JSON.stringify(kept)).toEqual(JSON.stringify(await readRunLogPage(reads, "r", { after, limit: 3, summary: fresh })));
          }
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("a foreign events/ folder of entries with empty modes and names", () => {
  it("keeps every entry in the index, so a seq stored after many of them is not lost", async () => {
    const oid = Buffer.alloc(20, 7);
    const parts: Buffer[] = [];
    for (let i = 0; i < 40; i += 1) parts.push(Buffer.concat([Buffer.from(" \0"), oid]));
    parts.push(Buffer.concat([Buffer.from("100644 1.json\0"), oid]));
    const content = Buffer.concat(parts);
    const treeOid = "ab".repeat(20) as Oid;
    const listed = fromEntries(dirEntriesOf(decodeTree(treeOid, content)));
    const bytes = await indexEventsFolder(treeOid, content);
    expect([bytes?.size, Array.from(bytes?.seqs ?? [])]).toEqual([listed.size, Array.from(listed.seqs)]);
    expect(Array.from(listed.seqs)).toEqual([1]);
    expect(indexTreeBytes(content)?.nuls.length).toBe(41);
  });
});
