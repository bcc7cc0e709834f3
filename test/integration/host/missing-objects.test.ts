/**
 * A deployment whose store lost one object (a disk fault, a bad copy, a partial fetch), built
 * with the real git CLI as loose objects, one of which is then removed: the deployment keeps
 * serving every other run. A missing event blob is that run's bad event at its seq; a missing
 * run folder or `events/` folder skips that run (reported, nothing armed); only a missing
 * `runs/` folder or tip commit fails the deployment (nothing can be read). A fire commit that
 * meets a run's missing folder commits the other runs' fires and reports that run.
 */
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/index.js";
import { workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-missing-obj-");
const NOW = "2026-01-01T12:00:00.000Z";
const PAST = "2026-01-01T11:00:00.000Z";
const SOON = "2026-01-01T12:01:00.000Z";

type Entry = { readonly mode: string; readonly name: string; readonly oid: string };

const event = (seq: number, type: string, data: unknown): string => JSON.stringify({ seq, type, at: `2026-01-01T00:00:0${seq}.000Z`, data });
const started = (): string => event(1, "WorkflowStarted", { workflow: "w" });
const timerSet = (seq: number, timerId: string, fireAt: string): string => event(seq, "TimerSet", { timerId, fireAt });

/** Writes loose objects with git's plumbing; trees byte for byte as given (names in git's order). */
class GitWriter {
  constructor(readonly gitdir: string) {}
  async blob(text: string): Promise<string> {
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-w", "--stdin"], { input: text })).trim();
  }
  async tree(entries: readonly Entry[]): Promise<string> {
    const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.mode === "40000" ? `${a.name}/` : a.name), Buffer.from(b.mode === "40000" ? `${b.name}/` : b.name)));
    const bytes = Buffer.concat(sorted.flatMap((e) => [Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex")]));
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-t", "tree", "-w", "--stdin"], { input: bytes })).trim();
  }
  /** A run folder `{ events: { <seq>.json: text } }`; returns its oid, its events oid and each event's blob oid. */
  async run(files: readonly string[]): Promise<{ tree: string; events: string; blobs: string[] }> {
    const blobs: string[] = [];
    for (const text of files) blobs.push(await this.blob(text));
    const events = await this.tree(blobs.map((oid, i) => ({ mode: "100644", name: `${i + 1}.json`, oid })));
    return { tree: await this.tree([{ mode: "40000", name: "events", oid: events }]), events, blobs };
  }
  async commit(runs: Readonly<Record<string, string>>): Promise<{ commit: string; root: string; runsTree: string }> {
    const runsTree = await this.tree(Object.entries(runs).map(([name, oid]) => ({ mode: "40000", name, oid })));
    const root = await this.tree([{ mode: "40000", name: "runs", oid: runsTree }]);
    const commit = (await gitAt(this.gitdir, ["commit-tree", root, "-m", "deployment"])).trim();
    await gitAt(this.gitdir, ["update-ref", "refs/heads/main", commit]);
    return { commit, root, runsTree };
  }
  /** Removes one loose object's file. */
  async lose(oid: string): Promise<void> {
    await rm(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)));
  }
}

interface Deployment {
  readonly dataDir: string;
  readonly w: GitWriter;
  readonly clock: FakeClock;
  readonly store: RepoStore;
}

const opened: RepoStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

async function deployment(): Promise<Deployment> {
  const dataDir = await tempDir();
  const gitdir = join(dataDir, "deployments", "d.git");
  await mkdir(join(dataDir, "deployments"), { recursive: true });
  await git(["init", "--bare", "-q", "-b", "main", gitdir]);
  const clock = createFakeClock(NOW);
  const store = createRepoStore({ dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
  opened.push(store);
  return { dataDir, w: new GitWriter(gitdir), clock, store };
}

/**
 * Runs what is due on the fake clock and gives the event loop turns (no time passes) until
 * `done()` holds: the repair's reads are real I/O, which `idle()` does not wait for.
 */
async function settle(clock: FakeClock, scheduler: { idle(): Promise<void> }, done: () => boolean, what: string): Promise<void> {
  for (let turn = 0; !done(); turn += 1) {
    if (turn >= 5_000) throw new Error(`never happened: ${what}`);
    await clock.advance(0);
    await scheduler.idle();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

const fired = (events: readonly SchedulerEvent[]): string[] => events.flatMap((e) => (e.type === "fired" ? [`${e.runId}/${e.timerId}`] : [])).sort();
const armedRuns = (events: readonly SchedulerEvent[]): string[] => [...new Set(events.flatMap((e) => (e.type === "armed" ? [e.runId] : [])))].sort();
const badOf = (events: readonly SchedulerEvent[], runId: string): Extract<SchedulerEvent, { type: "bad_event" }>[] =>
  events.flatMap((e) => (e.type === "bad_event" && e.runId === runId ? [e] : []));

describe("a deployment with one object missing", () => {
  it("recovers and fires the other runs; a missing event blob is that run's bad event at its seq", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const blob = await d.w.run([started(), timerSet(2, "lost", PAST), timerSet(3, "kept", PAST)]);
    const { commit } = await d.w.commit({ "r-ok": ok.tree, "r-blob": blob.tree });
    const lost = blob.blobs[1] as string;
    await d.w.lose(lost);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ repoId: "d", commitSha: commit, runs: 2 })]);
      const bad = badOf(events, "r-blob");
      expect(bad).toHaveLength(1);
      expect(bad[0]).toMatchObject({ seq: 2, path: "runs/r-blob/events/2.json", error: { code: "object_missing", data: { oid: lost, path: "runs/r-blob/events/2.json" } } });
      expect(bad[0]?.error.message).toContain(lost);
      expect(bad[0]?.error.message).toContain("runs/r-blob/events/2.json");
      // The run's other events fold as around any bad event: its other timer fires.
      expect(fired(events)).toEqual(["r-blob/kept", "r-ok/t"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("reads a run again once its missing objects are restored (a copy that completes late): its timers then fire", async () => {
    const d = await deployment();
    const lostText = timerSet(2, "late", PAST);
    const blob = await d.w.run([started(), lostText]);
    const folderLost = await d.w.run([started(), timerSet(2, "late2", PAST)]);
    await d.w.commit({ "r-blob": blob.tree, "r-folder": folderLost.tree });
    await d.w.lose(blob.blobs[1] as string);
    await d.w.lose(folderLost.events);
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(fired(events)).toEqual([]);
      expect(events.filter((e) => e.type === "bad_event").map((e) => (e as { path: string }).path).sort()).toEqual(["runs/r-blob/events/2.json", "runs/r-folder/events"]);
      // Still missing at the first tries: read again later, not reported again.
      await d.clock.advance(1_600);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "bad_event")).toHaveLength(2);
      // The objects arrive (written again: the same bytes, the same oids).
      await d.w.blob(lostText);
      await d.w.tree([{ mode: "100644", name: "1.json", oid: folderLost.blobs[0] as string }, { mode: "100644", name: "2.json", oid: folderLost.blobs[1] as string }]);
      await d.clock.advance(5_000);
      await settle(d.clock, scheduler, () => fired(events).length >= 2, "the restored runs' timers fired");
      expect(fired(events)).toEqual(["r-blob/late", "r-folder/late2"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("skips and reports a run whose folder or events folder is missing; the others fire", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    // Not the same bytes as r-ok's folder (then it would be the same object).
    const noTree = await d.w.run([started(), timerSet(2, "t2", PAST)]);
    const noEvents = await d.w.run([started(), timerSet(2, "u", PAST), timerSet(3, "v", PAST)]);
    await d.w.commit({ "r-ok": ok.tree, "r-no-tree": noTree.tree, "r-no-events": noEvents.tree });
    await d.w.lose(noTree.tree);
    await d.w.lose(noEvents.events);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ repoId: "d" })]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(badOf(events, "r-no-tree")).toEqual([
        expect.objectContaining({ seq: null, path: "runs/r-no-tree", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: noTree.tree }) }) }),
      ]);
      expect(badOf(events, "r-no-events")).toEqual([
        expect.objectContaining({ seq: null, path: "runs/r-no-events/events", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: noEvents.events }) }) }),
      ]);
    } finally {
      await scheduler.stop();
    }
  });

  it("fails the whole deployment (retried) when its runs/ folder or tip commit is missing", async () => {
    for (const what of ["runs", "commit"] as const) {
      const d = await deployment();
      const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
      const { commit, runsTree } = await d.w.commit({ "r-ok": ok.tree });
      await d.w.lose(what === "runs" ? runsTree : commit);
      const { scheduler, events } = makeScheduler(d.store, d.clock);
      await scheduler.start();
      try {
        expect(events.filter((e) => e.type === "recovered")).toEqual([]);
        // A ref whose commit is gone is a dangling ref (ref_corrupt); a lost folder, object_corrupt.
        const code = what === "runs" ? "object_corrupt" : "ref_corrupt";
        expect(events).toContainEqual(expect.objectContaining({ type: "repo_failed", repoId: "d", error: expect.objectContaining({ code }) }));
        expect(fired(events)).toEqual([]);
      } finally {
        await scheduler.stop();
      }
    }
  });

  it("commits the other runs' fires when one run's folder goes missing under a running host", async () => {
    const d = await deployment();
    // Each folder its own bytes (the same bytes would be the same objects).
    const a = await d.w.run([started(), timerSet(2, "ta", SOON)]);
    const b = await d.w.run([started(), timerSet(2, "tb", SOON)]);
    const c = await d.w.run([started(), timerSet(2, "tc", SOON)]);
    await d.w.commit({ "r-a": a.tree, "r-b": b.tree, "r-c": c.tree });
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(armedRuns(events)).toEqual(["r-a", "r-b", "r-c"]);
      // Lost after recovery read it: the fire commit meets it when it appends to the folder.
      await d.w.lose(b.events);
      await d.w.lose(b.tree);
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-a/ta", "r-c/tc"]);
      const failed = events.filter((e) => e.type === "commit_failed");
      expect(failed.length).toBeGreaterThan(0);
      // The run is named and retried at the longest backoff, not in a loop of quick retries.
      for (const f of failed) expect(f).toMatchObject({ repoId: "d", runId: "r-b", retryInMs: 30_000, error: { code: "object_corrupt" } });
    } finally {
      await scheduler.stop();
    }
  });
});
