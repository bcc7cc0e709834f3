/**
 * A validated append to a long run (a signal's, through the run-log append) built from the
 * stored `events/` folder's bytes, against the real git: the commit's tree is the one the
 * generic edit gives the same files (same oids, `git fsck --strict` clean); the kind's push
 * check still refuses a bad append with nothing written; and the write gives the event loop
 * turns while it works on the big folder (between the plan and the push check, where the old
 * edit decoded the whole folder in one step).
 */
import * as nodeFs from "node:fs";
import { cp, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { DEFAULT_REF } from "../../../src/substrate/ref-name.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { KindHandler, RepoStore } from "../../../src/substrate/types.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-validated-append-");
const REPO = { kind: WORKFLOW_RUN_KIND, id: "dep" };
/** Events in the long run: enough for a folder of ~700 KB, a few seconds to build. */
const EVENTS = 20_000;

const stores: RepoStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function open(dataDir: string, handler: KindHandler = workflowRunKind(), fs?: unknown): RepoStore {
  const store = createRepoStore({ dataDir, kindHandlers: [handler], authorize: allowAll, watch: false, ...(fs === undefined ? {} : { fs }) });
  stores.push(store);
  return store;
}

/** A deployment `dep` whose run `r` has events 1 … EVENTS (and a short run `s`). */
async function withLongRun(dataDir: string): Promise<void> {
  const files: Record<string, object> = { "runs/s/events/1.json": { seq: 1, type: "StepStarted", n: 0 } };
  for (let seq = 1; seq <= EVENTS; seq += 1) files[`runs/r/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
  const store = open(dataDir);
  await buildFixtureRepo(store, "dep", files);
  await store.close();
}

const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep.git");

function signal(n: number): Record<string, unknown> {
  return { type: "SignalReceived", signalName: "poke", signalId: `s-${n}`, payload: { n }, at: "2026-05-01T00:00:00.000Z" };
}

/** node:fs with each file read and open (promise and blocking calls) noted in `seen` as `<call> <path>`. */
function readsSeenBy(seen: string[]): unknown {
  const noting = (target: object, key: string | symbol, names: readonly string[]): unknown => {
    const value = Reflect.get(target, key) as unknown;
    if (typeof value !== "function") return value;
    if (!names.includes(String(key))) return value.bind(target);
    return (path: unknown, ...rest: unknown[]) => {
      seen.push(`${String(key)} ${String(path)}`);
      return (value as (...args: unknown[]) => unknown).call(target, path, ...rest);
    };
  };
  const promises = new Proxy(nodeFs.promises, { get: (target, key) => noting(target, key, ["readFile", "open"]) });
  return new Proxy(nodeFs, { get: (target, key) => (key === "promises" ? promises : noting(target, key, ["readFileSync", "openSync"])) });
}

/** The packs (a read may add a pack's `.rev` beside it: not an object written). */
async function packsOf(dataDir: string): Promise<string[]> {
  return (await readdir(join(gitdirOf(dataDir), "objects", "pack"))).filter((name) => name.endsWith(".pack")).sort();
}

describe("a validated append to a run of 20,000 events", () => {
  it("commits the tree the generic edit gives the same files", async () => {
    const built = await tempDir();
    await withLongRun(built);
    const generic = await tempDir();
    await cp(built, generic, { recursive: true });

    // Two events to the long run and one to the short run, in one commit (a batch of appends).
    const store = open(built);
    const appended = await Promise.all([
      appendRunEvents({ store, principal: null, repoId: "dep", runId: "r", message: "two", decide: () => ({ append: [signal(1), signal(2)], result: null }) }),
      appendRunEvents({ store, principal: null, repoId: "dep", runId: "s", message: "one", decide: () => ({ append: [signal(3)], result: null }) }),
    ]);
    expect(appended.map((w) => w.committed)).toEqual([true, true]);
    expect(appended[0]?.commitSha).toBe(appended[1]?.commitSha);
    const gitdir = gitdirOf(built);
    await expectFsckClean(gitdir);

    // The same files put through the generic edit (writeTree), in a copy of the repository.
    const paths = [`runs/r/events/${EVENTS + 1}.json`, `runs/r/events/${EVENTS + 2}.json`, "runs/s/events/2.json"];
    const files: Record<string, string> = {};
    for (const path of paths) files[path] = await gitAt(gitdir, ["show", `main:${path}`]);
    const other = open(generic);
    await other.writeTree(null, REPO, DEFAULT_REF, { files, message: "generic" });

    const tree = (dir: string): Promise<string> => gitAt(gitdirOf(dir), ["rev-parse", "main^{tree}"]);
    expect((await tree(built)).trim()).toMatch(/^[0-9a-f]{40}$/);
    expect(await tree(built)).toBe(await tree(generic));
    const listing = (dir: string): Promise<string> => gitAt(gitdirOf(dir), ["ls-tree", "-r", "-t", "main", "runs/"]);
    expect(await listing(built)).toBe(await listing(generic));
    expect((await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/r/events/"])).split("\n").filter(Boolean)).toHaveLength(EVENTS + 2);
  }, 60_000);

  it("keeps the folders it built: the next append to the run reads nothing of the pack the last one wrote, and commits the same tree", async () => {
    const dataDir = await tempDir();
    await withLongRun(dataDir);
    const generic = await tempDir();
    await cp(dataDir, generic, { recursive: true });
    const seen: string[] = [];
    const store = open(dataDir, workflowRunKind(), readsSeenBy(seen));
    const append = (n: number) => appendRunEvents({ store, principal: null, repoId: "dep", runId: "r", message: `signal ${n}`, decide: () => ({ append: [signal(n)], result: null }) });
    const before = await packsOf(dataDir);
    expect((await append(1)).committed).toBe(true);
    const written = (await packsOf(dataDir)).filter((name) => !before.includes(name));
    // One pack with the new events/ (~700 KB): small enough to be read whole, SHA-1 and all.
    expect(written).toHaveLength(1);
    expect((await append(2)).committed).toBe(true);
    // Every read of that pack, from its writing on: the write path before read it back whole
    // (and checked its SHA-1) to find the events/ folder it had just built.
    expect(seen.filter((call) => call.endsWith(`/${written[0] as string}`))).toEqual([]);
    await expectFsckClean(gitdirOf(dataDir));

    // The same two files put through the generic edit in a copy give the same tree.
    const gitdir = gitdirOf(dataDir);
    const files: Record<string, string> = {};
    for (const path of [`runs/r/events/${EVENTS + 1}.json`, `runs/r/events/${EVENTS + 2}.json`]) files[path] = await gitAt(gitdir, ["show", `main:${path}`]);
    await open(generic).writeTree(null, REPO, DEFAULT_REF, { files, message: "generic" });
    const tree = (dir: string): Promise<string> => gitAt(gitdirOf(dir), ["rev-parse", "main^{tree}"]);
    expect((await tree(dataDir)).trim()).toMatch(/^[0-9a-f]{40}$/);
    expect(await tree(dataDir)).toBe(await tree(generic));
  }, 60_000);

  it("is refused by the push check with nothing written: a seq that breaks the sequence, an invalid event", async () => {
    const dataDir = await tempDir();
    await withLongRun(dataDir);
    const store = open(dataDir);
    const gitdir = gitdirOf(dataDir);
    const tip = await gitAt(gitdir, ["rev-parse", "main"]);
    const packs = await packsOf(dataDir);
    const bad = async (name: string, content: string): Promise<unknown> =>
      store
        .writeTreeDelta(null, REPO, DEFAULT_REF, {
          message: "bad",
          computeDelta: () => ({ appends: [{ folder: "runs/r", sub: "events", files: [{ name, content: Buffer.from(content) }] }] }),
        })
        .then(
          () => null,
          (error: unknown) => error,
        );
    const skip = EVENTS + 5;
    const next = EVENTS + 1;
    const cases: [string, string, string, string][] = [
      [`${skip}.json`, JSON.stringify({ seq: skip, ...signal(1) }), "event_invalid", "breaks the dense sequence"],
      [`${next}.json`, JSON.stringify({ seq: next, type: "SignalReceived", signalId: "x" }), "event_invalid", ""],
      [`${next}.json`, JSON.stringify({ seq: next, type: "TimerSet", data: { timerId: "t", fireAt: "not a time" } }), "time_invalid", ""],
      [`${next}.json`, "{ not json", "event_invalid", ""],
      [`${next}.json`, JSON.stringify({ seq: next + 1, ...signal(2) }), "event_invalid", ""],
    ];
    for (const [name, content, code, message] of cases) {
      const error = await bad(name, content);
      expect(error, content).toBeInstanceOf(WorkflowHostError);
      expect((error as WorkflowHostError).code, content).toBe(code);
      expect((error as WorkflowHostError).message).toContain(message);
      expect((error as WorkflowHostError).data).toMatchObject({ path: `runs/r/events/${name}` });
    }
    expect(await gitAt(gitdir, ["rev-parse", "main"])).toBe(tip);
    expect(await packsOf(dataDir)).toEqual(packs);
    await expectFsckClean(gitdir);

    // The right seq still goes through.
    const good = await bad(`${next}.json`, JSON.stringify({ seq: next, ...signal(3) }));
    expect(good).toBeNull();
    expect(await gitAt(gitdir, ["rev-parse", "main"])).not.toBe(tip);
  }, 60_000);

  it("gives the event loop turns between the plan and the push check", async () => {
    const dataDir = await tempDir();
    await withLongRun(dataDir);
    // Turns of the event loop, counted by a setImmediate chain while the append runs.
    let turns = 0;
    let counting = false;
    const spin = (): void => {
      if (!counting) return;
      turns += 1;
      setImmediate(spin);
    };
    const marks: { planned?: number; checked?: number } = {};
    const kind = workflowRunKind();
    const handler: KindHandler = {
      ...kind,
      validatePush: async (ctx) => {
        marks.checked ??= turns;
        await kind.validatePush?.(ctx);
      },
    };
    const base = open(dataDir, handler);
    const store = Object.create(base) as RepoStore;
    store.writeTreeDelta = (p, repo, ref, opts) =>
      base.writeTreeDelta(p, repo, ref, {
        ...opts,
        computeDelta: async (parent, reads) => {
          const delta = await opts.computeDelta(parent, reads);
          if (delta?.appends !== undefined || delta?.puts !== undefined) marks.planned ??= turns;
          return delta;
        },
      });
    // The log is read (and kept) first: the append measured below is the commit alone, whose
    // reads are all in memory, so the only turns it gives are its own.
    const nothing = await appendRunEvents({ store, principal: null, repoId: "dep", runId: "r", message: "nothing", decide: () => ({ append: [], result: null }) });
    expect(nothing.committed).toBe(false);
    // Each time slice of the write ends at once (its clock moves 11 ms per look): whether the
    // write yields inside its work is then a count of turns, not of elapsed time.
    let fake = performance.now();
    vi.spyOn(performance, "now").mockImplementation(() => (fake += 11));
    counting = true;
    setImmediate(spin);
    const written = await appendRunEvents({ store, principal: null, repoId: "dep", runId: "r", message: "one", decide: () => ({ append: [signal(1)], result: null }) });
    counting = false;
    vi.restoreAllMocks();
    expect(written.committed).toBe(true);
    expect(marks.planned).toBeDefined();
    expect(marks.checked).toBeDefined();
    expect((marks.checked as number) - (marks.planned as number)).toBeGreaterThan(0);
    await expectFsckClean(gitdirOf(dataDir));
  }, 60_000);
});
