/**
 * Deployments written by the real git CLI with odd shapes (a run folder as a file, symlink or
 * gitlink; `events` as a file, twice, or with the old `040000` mode; names that are not seqs,
 * names stored twice, huge events, empty folders, executable files, symlinks, gitlinks,
 * missing blobs), stored loose, packed compressed, packed uncompressed (the blobs a scan reads
 * as views of the pack window) and packed as deltas: each run's log read by the run folder's
 * oid (what a recovery does) equals the log read by path (what it did before), problems
 * included, and the `events` oid it tells is what `treeOid` answers; the scheduler's recovery
 * of the whole deployment reports the bad runs and events (a missing event blob is its run's
 * bad event at its seq, by oid as by path; the deployment recovers). The scheduler's events
 * here were compared with those of the code before runs were read by oid: the same.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock } from "../../../src/testing/index.js";
import { readRunLog, type RunLog } from "../../../src/workflow/run-log.js";
import { workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { makeScheduler, repoIdOf } from "../../helpers/fixture-scheduler.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-byoid-git-");
const NOW = "2026-01-01T12:00:00.000Z";
const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

type Entry = { readonly mode: string; readonly name: string; readonly oid: string };

const event = (seq: number, type: string, data: unknown, extra = ""): string =>
  JSON.stringify({ seq, type, at: `2026-01-01T00:00:0${seq % 10}.000Z`, data }) + extra;
const started = (seq = 1): string => event(seq, "WorkflowStarted", { workflow: "w" });
const timerSet = (seq: number, timerId: string, fireAt = "2026-01-01T11:00:00.000Z", pad = ""): string => event(seq, "TimerSet", { timerId, fireAt, ...(pad === "" ? {} : { pad }) });

class GitWriter {
  constructor(readonly gitdir: string) {}
  async blob(text: string | Uint8Array): Promise<string> {
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-w", "--stdin"], { input: text })).trim();
  }
  /** A tree written byte for byte as given: any order, duplicates, any mode. */
  async tree(entries: readonly Entry[]): Promise<string> {
    const bytes = Buffer.concat(entries.flatMap((e) => [Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex")]));
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-t", "tree", "-w", "--literally", "--stdin"], { input: bytes })).trim();
  }
  async events(files: Record<string, string>): Promise<string> {
    const entries: Entry[] = [];
    for (const [name, text] of Object.entries(files)) entries.push({ mode: "100644", name, oid: await this.blob(text) });
    return this.tree(sortGit(entries));
  }
}

/** Git's order: bytes, a folder's name as if followed by "/". */
function sortGit(entries: Entry[]): Entry[] {
  const key = (e: Entry): Buffer => Buffer.from(e.mode === "40000" || e.mode === "040000" ? `${e.name}/` : e.name, "utf8");
  return entries.sort((a, b) => Buffer.compare(key(a), key(b)));
}

/** Writes the odd deployment; returns the run ids whose folder is a tree. */
async function writeDeployment(w: GitWriter, missingBlob: boolean): Promise<{ runIds: string[]; tip: string }> {
  const folder = (name: string, oid: string): Entry => ({ mode: "40000", name, oid });
  const file = (name: string, oid: string, mode = "100644"): Entry => ({ mode, name, oid });
  const runs: Entry[] = [];
  const run = async (id: string, entries: Entry[]): Promise<void> => {
    runs.push(folder(id, await w.tree(entries)));
  };
  const okEvents = await w.events({ "1.json": started(), "2.json": timerSet(2, "t") });
  await run("r-ok", [folder("events", okEvents)]);
  await run("r-events-file", [file("events", await w.blob(started()))]);
  // `events` twice: a file before the folder (git's order), then the folder before a file.
  await run("r-events-twice", [file("events", await w.blob("x")), folder("events", okEvents)]);
  await run("r-events-twice-rev", [folder("events", okEvents), file("events", await w.blob("y"))]);
  await run("r-events-two-folders", [folder("events", okEvents), folder("events", await w.events({ "1.json": started() }))]);
  await run("r-events-040000", [{ mode: "040000", name: "events", oid: okEvents }]);
  await run("r-events-gitlink", [{ mode: "160000", name: "events", oid: "1".repeat(40) }]);
  await run("r-events-symlink", [{ mode: "120000", name: "events", oid: await w.blob("../r-ok/events") }]);
  await run("r-names", [
    folder(
      "events",
      await w.tree(sortGit([
        file("1.json", await w.blob(started())),
        file("01.json", await w.blob(started())),
        file("2.json", await w.blob(timerSet(2, "a"))),
        file("2.json.bak", await w.blob("{}")),
        file("x.json", await w.blob("{}")),
        file("-1.json", await w.blob("{}")),
        file("3", await w.blob("{}")),
        file("9007199254740993.json", await w.blob("{}")),
      ])),
    ),
  ]);
  await run("r-dup-names", [folder("events", await w.tree([file("1.json", await w.blob(started())), file("1.json", await w.blob(started())), file("2.json", await w.blob(timerSet(2, "d")))]))]);
  await run("r-unsorted", [folder("events", await w.tree([file("2.json", await w.blob(timerSet(2, "u"))), file("1.json", await w.blob(started()))]))]);
  // 200 KB (stored in several blocks uncompressed), 1.5 MB (over the event limit).
  await run("r-huge", [folder("events", await w.events({ "1.json": started(), "2.json": timerSet(2, "h", undefined, "x".repeat(200_000)), "3.json": timerSet(3, "h2", undefined, "y".repeat(1_500_000)) }))]);
  await run("r-empty-events", [folder("events", EMPTY_TREE)]);
  await run("r-empty", []);
  await run("r-modes", [
    folder(
      "events",
      await w.tree([
        file("1.json", await w.blob(started()), "100755"),
        file("2.json", await w.blob("3.json"), "120000"),
        file("3.json", "2".repeat(40), "160000"),
        folder("4.json", okEvents),
        file("5.json", await w.blob(timerSet(5, "m")), "100664"),
      ]),
    ),
  ]);
  // git repacks no deployment with an object missing: loose only.
  if (missingBlob) await run("r-missing-blob", [folder("events", await w.tree([file("1.json", await w.blob(started())), file("2.json", "3".repeat(40))]))]);
  await run("r-blobs", [folder("blobs", await w.tree([file("not-hex", await w.blob("b")), folder("a".repeat(64), EMPTY_TREE)])), folder("events", okEvents), file("grants.json", await w.blob("{}")), file("stray", await w.blob("s"))]);
  await run("r-bad-json", [folder("events", await w.events({ "1.json": started(), "2.json": "{not json", "3.json": "\xff\xfe", "4.json": timerSet(4, "b") }))]);
  const runIds = runs.map((r) => r.name);
  // A run folder named twice (the second one without events).
  runs.push(folder("r-twice", await w.tree([folder("events", okEvents)])), folder("r-twice", await w.tree([file("grants.json", await w.blob("{}"))])));
  // Not run folders: a file, a symlink, a gitlink.
  runs.push(file("r-file", await w.blob("not a run")), file("r-symlink", await w.blob("r-ok"), "120000"), file("r-gitlink", "4".repeat(40), "160000"));
  const runsTree = await w.tree(sortGit(runs));
  const root = await w.tree([folder("runs", runsTree)]);
  const commit = (await gitAt(w.gitdir, ["commit-tree", root, "-m", "odd deployment"])).trim();
  await gitAt(w.gitdir, ["update-ref", "refs/heads/main", commit]);
  return { runIds, tip: commit };
}

type Outcome = { readonly ok: unknown } | { readonly error: unknown };

const comparable = (log: RunLog): unknown => ({
  ...log,
  eventsOid: undefined,
  lastEventOid: undefined,
  bad: log.bad.map((b) => [b.path, b.seq, b.error.code, b.error.message]),
  problems: log.problems.map((p) => [p.path, p.seq, p.error.code, p.error.message]),
});

async function outcome(read: () => Promise<RunLog>): Promise<Outcome> {
  try {
    return { ok: comparable(await read()) };
  } catch (error) {
    return { error: (error as { code?: string }).code ?? String(error) };
  }
}

async function compareReads(store: RepoStore, runIds: readonly string[]): Promise<void> {
  const rid = repoIdOf("d");
  const reads = await store.openCommittedReads(null, rid, "refs/heads/main");
  const runOids = new Map((await reads.listDir("runs")).map((e) => [e.name, e.oid]));
  for (const runId of runIds) {
    const byPath = await outcome(() => readRunLog(reads.scan?.() ?? reads, runId, { parsedEvents: null }));
    let eventsOid: string | null | undefined;
    let lastEventOid: string | null | undefined;
    let maxFileSeq = -1;
    const byOid = await outcome(async () => {
      const log = await readRunLog(reads.scan?.() ?? reads, runId, { parsedEvents: null, runTreeOid: runOids.get(runId) as string });
      eventsOid = log.eventsOid;
      lastEventOid = log.lastEventOid;
      maxFileSeq = log.maxFileSeq;
      return log;
    });
    expect({ runId, byOid }).toEqual({ runId, byOid: byPath });
    if ("ok" in byOid) expect({ runId, eventsOid }).toEqual({ runId, eventsOid: await reads.treeOid(`runs/${runId}/events`) });
    // The last event file's blob, when it is one (a folder or link there is a bad entry, told as null).
    if ("ok" in byOid && lastEventOid !== null) expect({ runId, lastEventOid }).toEqual({ runId, lastEventOid: await reads.treeOid(`runs/${runId}/events/${maxFileSeq}.json`) });
  }
}

const layouts: readonly { readonly name: string; readonly prepare: (gitdir: string) => Promise<void> }[] = [
  { name: "loose", prepare: async () => undefined },
  { name: "packed, compressed", prepare: (gitdir) => gitAt(gitdir, ["repack", "-adf"]).then(() => undefined) },
  { name: "packed, stored uncompressed", prepare: (gitdir) => gitAt(gitdir, ["-c", "pack.compression=0", "repack", "-adf", "--window=0"]).then(() => undefined) },
  { name: "packed as deltas", prepare: (gitdir) => gitAt(gitdir, ["-c", "pack.compression=0", "repack", "-adf", "--window=250", "--depth=50"]).then(() => undefined) },
];

describe("odd deployments written by git, read by oid and by path", () => {
  for (const layout of layouts) {
    it(`reads every run the same way by oid as by path, and recovers without failing (${layout.name})`, async () => {
      const dataDir = await tempDir();
      const gitdir = join(dataDir, "deployments", "d.git");
      await mkdir(join(dataDir, "deployments"), { recursive: true });
      await git(["init", "--bare", "-q", "-b", "main", gitdir]);
      const { runIds, tip } = await writeDeployment(new GitWriter(gitdir), layout.name === "loose");
      await layout.prepare(gitdir);
      const clock = createFakeClock(NOW);
      const store = createRepoStore({ dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
      try {
        await compareReads(store, runIds);
        const { scheduler, events } = makeScheduler(store, clock);
        await scheduler.start();
        try {
          const armed = events.flatMap((e) => (e.type === "armed" ? [e.runId] : []));
          // A run folder named twice in runs/, and `events` stored as a file before the folder:
          // read by path as they always were (the lookup by name answers the entry without events).
          expect(armed).not.toContain("r-twice");
          expect(armed).not.toContain("r-events-twice");
          expect(armed).toContain("r-ok");
          // A missing event blob is its run's bad event at its seq, never the deployment's failure.
          expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
          const recovered = events.filter((e) => e.type === "recovered");
          expect(recovered).toEqual([expect.objectContaining({ repoId: "d", commitSha: tip })]);
          expect((recovered[0] as { badEvents: number }).badEvents).toBeGreaterThan(0);
          const missing = events.filter((e) => e.type === "bad_event" && e.error.code === "object_missing");
          if (layout.name === "loose") {
            expect(missing).toEqual([expect.objectContaining({ runId: "r-missing-blob", seq: 2, path: "runs/r-missing-blob/events/2.json", error: expect.objectContaining({ data: expect.objectContaining({ oid: "3".repeat(40) }) }) })]);
            expect(armed).not.toContain("r-missing-blob");
          } else {
            expect(missing).toEqual([]);
          }
        } finally {
          await scheduler.stop();
        }
      } finally {
        await store.close();
      }
    });
  }
});
