/**
 * A deployment built object by object with git's plumbing (`hash-object`, `commit-tree`,
 * `update-ref`) beside a store and a scheduler on a fake clock: what the tests of damaged and
 * missing objects start from before they remove or damage one object on disk.
 */
import { createHash } from "node:crypto";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach } from "vitest";
import type { SchedulerEvent } from "../../seams/scheduler/scheduler-types.js";
import { allowAll } from "../../src/substrate/allow-all.js";
import { createRepoStore } from "../../src/substrate/repo-store.js";
import type { RepoStore } from "../../src/substrate/types.js";
import { createFakeClock, type FakeClock } from "../../src/testing/index.js";
import { workflowRunKind } from "../../src/workflow/workflow-run-kind.js";
import { git, gitAt } from "./git-cli.js";
import { makeTempDir, removeTempDir } from "./temp-dir.js";
import { outOfTurns } from "./wait-turns.js";

/** The fake clock's start; PAST is due at once, SOON a minute later. */
export const NOW = "2026-01-01T12:00:00.000Z";
export const PAST = "2026-01-01T11:00:00.000Z";
export const SOON = "2026-01-01T12:01:00.000Z";

export type Entry = { readonly mode: string; readonly name: string; readonly oid: string };

export const event = (seq: number, type: string, data: unknown): string => JSON.stringify({ seq, type, at: `2026-01-01T00:00:0${seq}.000Z`, data });
export const started = (): string => event(1, "WorkflowStarted", { workflow: "w" });
export const timerSet = (seq: number, timerId: string, fireAt: string): string => event(seq, "TimerSet", { timerId, fireAt });

/**
 * A fixture repository written once per test file and copied into each test that asks for it:
 * the first call runs `write` on a new bare repo (branch `main`), every call copies that repo's
 * files over `gitdir` and returns what `write` returned; the repo is removed after the file.
 * For fixtures git writes the same way every time (fixed dates): a copy holds what writing them
 * again would, in a folder of the test's own. Call it at the top of a test file.
 */
export function writtenOnce<T>(prefix: string, write: (gitdir: string) => Promise<T>): (gitdir: string) => Promise<T> {
  let pristine: Promise<{ gitdir: string; value: T }> | undefined;
  let root: string | undefined;
  afterAll(async () => {
    if (root !== undefined) await removeTempDir(root);
  });
  return async (into) => {
    pristine ??= (async () => {
      root = await makeTempDir(prefix);
      const gitdir = join(root, "d.git");
      await git(["init", "--bare", "-q", "-b", "main", gitdir]);
      return { gitdir, value: await write(gitdir) };
    })();
    const { gitdir, value } = await pristine;
    await cp(gitdir, into, { recursive: true, force: true });
    return value;
  };
}

/** A tree's bytes: `entries` in git's order (a folder's name sorts as if it ended in "/"). */
function treeBytes(entries: readonly Entry[]): Buffer {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.mode === "40000" ? `${a.name}/` : a.name), Buffer.from(b.mode === "40000" ? `${b.name}/` : b.name)));
  return Buffer.concat(sorted.flatMap((e) => [Buffer.from(`${e.mode} ${e.name}\0`, "utf8"), Buffer.from(e.oid, "hex")]));
}

/** The oid git gives a tree of these bytes (SHA-1 of "tree <size>\0" and the bytes). */
const treeOid = (bytes: Buffer): string => createHash("sha1").update(`tree ${bytes.length}\0`).update(bytes).digest("hex");

/**
 * Writes loose objects with git's plumbing; trees byte for byte as given (names in git's order).
 * {@link run} and {@link commit} write their objects of one type with one `git hash-object` (a
 * folder's oid, which its parent's bytes name, computed here first and checked against git's).
 */
export class GitWriter {
  constructor(readonly gitdir: string) {}
  async blob(text: string): Promise<string> {
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-w", "--stdin"], { input: text })).trim();
  }
  async tree(entries: readonly Entry[]): Promise<string> {
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "-t", "tree", "-w", "--stdin"], { input: treeBytes(entries) })).trim();
  }
  /**
   * Writes each of `contents` as an object of `type` with one `git hash-object -w --no-filters`
   * (as `--stdin` writes it: the bytes as they are); their oids, in order.
   */
  private async writeEach(type: "blob" | "tree", contents: readonly (string | Buffer)[]): Promise<string[]> {
    const dir = await mkdtemp(join(tmpdir(), "wh-git-writer-"));
    try {
      const paths = contents.map((_, i) => join(dir, String(i)));
      await Promise.all(contents.map((content, i) => writeFile(paths[i] as string, content)));
      const oids = (await git([`--git-dir=${this.gitdir}`, "hash-object", "-w", "--no-filters", "-t", type, "--", ...paths])).trim().split("\n");
      if (oids.length !== contents.length) throw new Error(`git hash-object wrote ${oids.length} objects of ${contents.length}`);
      return oids;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  /** Writes trees each naming the one before (the first names no other); their oids, checked against git's. */
  private async writeTreeChain(first: readonly Entry[], parents: readonly ((childOid: string) => readonly Entry[])[]): Promise<string[]> {
    const bytes = [treeBytes(first)];
    for (const parent of parents) bytes.push(treeBytes(parent(treeOid(bytes[bytes.length - 1] as Buffer))));
    const oids = await this.writeEach("tree", bytes);
    const expected = bytes.map(treeOid);
    if (oids.join() !== expected.join()) throw new Error(`git wrote trees ${oids.join(", ")}, not ${expected.join(", ")}`);
    return oids;
  }
  /** A run folder `{ events: { <seq>.json: text } }`; returns its oid, its events oid and each event's blob oid. */
  async run(files: readonly string[]): Promise<{ tree: string; events: string; blobs: string[] }> {
    const blobs = files.length === 0 ? [] : await this.writeEach("blob", files);
    const [events, tree] = (await this.writeTreeChain(
      blobs.map((oid, i) => ({ mode: "100644", name: `${i + 1}.json`, oid })),
      [(oid) => [{ mode: "40000", name: "events", oid }]],
    )) as [string, string];
    return { tree, events, blobs };
  }
  /** Commits `runs/<name>` for each run and moves `refs/heads/main` to it. */
  async commit(runs: Readonly<Record<string, string>>): Promise<{ commit: string; root: string; runsTree: string }> {
    const [runsTree, root] = (await this.writeTreeChain(
      Object.entries(runs).map(([name, oid]) => ({ mode: "40000", name, oid })),
      [(oid) => [{ mode: "40000", name: "runs", oid }]],
    )) as [string, string];
    const commit = (await gitAt(this.gitdir, ["commit-tree", root, "-m", "deployment"])).trim();
    await gitAt(this.gitdir, ["update-ref", "refs/heads/main", commit]);
    return { commit, root, runsTree };
  }
}

/** A {@link GitWriter} that also removes loose objects, for the tests of lost objects. */
export class LosingWriter extends GitWriter {
  /** Removes one loose object's file. */
  async lose(oid: string): Promise<void> {
    await rm(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)));
  }
  /** The oid `text` would have as a blob, without writing it (`hash-object` without `-w`). */
  async oidOf(text: string): Promise<string> {
    return (await git([`--git-dir=${this.gitdir}`, "hash-object", "--stdin"], { input: text })).trim();
  }
  /** Event file names of `runs/<runId>/events/` on main. */
  async eventFiles(runId: string): Promise<string[]> {
    return (await gitAt(this.gitdir, ["ls-tree", "--name-only", "main", `runs/${runId}/events/`])).trim().split("\n").map((p) => p.split("/").at(-1) as string);
  }
}

export interface PlumbingDeployment<W extends GitWriter> {
  readonly dataDir: string;
  readonly w: W;
  readonly clock: FakeClock;
  /** The store the deployment was opened with (see {@link reopen}). */
  readonly store: RepoStore;
  /**
   * Closes {@link store} and opens another on the same data dir, as a restarted host does (its
   * caches empty, so what was lost on disk meanwhile is not served from memory).
   */
  reopen(): Promise<RepoStore>;
}

/**
 * Registers closing every store made in a test after it, and returns the maker of deployments:
 * an empty bare repo `deployments/d.git` in a fresh data dir, a store on it (no watcher) and a
 * fake clock at {@link NOW}.
 */
export function usePlumbingDeployments<W extends GitWriter>(tempDir: () => Promise<string>, writer: (gitdir: string) => W): () => Promise<PlumbingDeployment<W>> {
  const opened: RepoStore[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });
  return async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "d.git");
    await mkdir(join(dataDir, "deployments"), { recursive: true });
    await git(["init", "--bare", "-q", "-b", "main", gitdir]);
    const clock = createFakeClock(NOW);
    const open = (): RepoStore => {
      const store = createRepoStore({ dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: clock.clock, watch: false });
      opened.push(store);
      return store;
    };
    const store = open();
    const reopen = async (): Promise<RepoStore> => {
      await store.close();
      opened.splice(opened.indexOf(store), 1);
      return open();
    };
    return { dataDir, w: writer(gitdir), clock, store, reopen };
  };
}

/**
 * Runs what is due on the fake clock and gives the event loop turns (no time passes) until
 * `done()` holds: a repair's reads are real I/O, which `idle()` does not wait for.
 */
export async function settle(clock: FakeClock, scheduler: { idle(): Promise<void> }, done: () => boolean, what: string): Promise<void> {
  const since = performance.now();
  for (let turn = 0; !done(); turn += 1) {
    if (outOfTurns(turn, 5_000, since)) throw new Error(`never happened: ${what}`);
    await clock.advance(0);
    await scheduler.idle();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/**
 * As {@link settle}, moving the fake clock `stepMs` ahead at each turn: for a retry whose timer
 * is set after real I/O that may end after the clock was moved past the instant it aims at (a
 * repair's backoff), so the test waits for the retry however slowly the I/O went.
 */
export async function settleAdvancing(clock: FakeClock, scheduler: { idle(): Promise<void> }, done: () => boolean, what: string, stepMs = 100): Promise<void> {
  const since = performance.now();
  for (let turn = 0; !done(); turn += 1) {
    if (outOfTurns(turn, 5_000, since)) throw new Error(`never happened: ${what}`);
    await clock.advance(stepMs);
    await scheduler.idle();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** `runId/timerId` of every fire, sorted. */
export const fired = (events: readonly SchedulerEvent[]): string[] => events.flatMap((e) => (e.type === "fired" ? [`${e.runId}/${e.timerId}`] : [])).sort();
/** The runs any timer was armed for, sorted. */
export const armedRuns = (events: readonly SchedulerEvent[]): string[] => [...new Set(events.flatMap((e) => (e.type === "armed" ? [e.runId] : [])))].sort();
/** The bad events reported for `runId`. */
export const badOf = (events: readonly SchedulerEvent[], runId: string): Extract<SchedulerEvent, { type: "bad_event" }>[] =>
  events.flatMap((e) => (e.type === "bad_event" && e.runId === runId ? [e] : []));
