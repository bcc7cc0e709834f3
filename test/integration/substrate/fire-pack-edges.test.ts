/**
 * A fire commit whose runs are built straight into pack entries, at the edges of that path: runs
 * whose event is over the packed blob limit or whose events folder is over one stored block,
 * beside small ones in the same commit; two events in one run; run ids and names that sort
 * around each other in git's order; two runs built to the same bytes; packs and loose objects.
 * The real git must find the result clean, and a subscriber's change list must be git's diff.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { CommitChange, FolderAppend, RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitAt, gitDiffTree, runGit } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-fire-edges-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };

/** Run ids that sort around each other (a folder sorts as its name and "/"). */
const ODD = ["a", "a-b", "a.b", "a0", "a_b", "A", "a~z", "a+b=c", "a@b", "a,b", "x"];

function seedFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const id of ODD) files[`runs/${id}/events/1.json`] = `{"seq":1,"run":"${id}"}`;
  // Names beside `events` in git order: a file "events.json" (before "events/"), "events0" after,
  // a folder "events-x" before.
  files["runs/a/events.json"] = "{}";
  files["runs/a-b/events0"] = "{}";
  files["runs/a.b/events-x/1.json"] = "{}";
  // Two runs with the same bytes: the same append builds the same folders.
  files["runs/d1/events/1.json"] = `{"seq":1}`;
  files["runs/d2/events/1.json"] = `{"seq":1}`;
  // An event over the packed blob limit, and an events folder over 64 KiB (2,100 entries).
  files["runs/bigevent/events/1.json"] = `{"seq":1}`;
  for (let i = 1; i <= 2_100; i++) files[`runs/bigfolder/events/${i}.json`] = `{"seq":${i}}`;
  files["runs/two/events/1.json"] = `{"seq":1,"two":true}`;
  files["runs/same/events/1.json"] = `{"seq":1,"same":true}`;
  return files;
}

function fireAppends(round: number): FolderAppend[] {
  const seq = round + 1;
  const small = (id: string): FolderAppend => ({ folder: `runs/${id}`, sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq},"run":"${id}","type":"TimerFired"}`) }] });
  return [
    ...ODD.map(small),
    { folder: "runs/d1", sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq}}`) }] },
    { folder: "runs/d2", sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq}}`) }] },
    { folder: "runs/bigevent", sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq},"pad":"${"p".repeat(1_500 + round)}"}`) }] },
    { folder: "runs/bigfolder", sub: "events", files: [{ name: `${2_100 + round}.json`, content: Buffer.from(`{"seq":${2_100 + round}}`) }] },
    // Two timers of one run in one commit, given out of git order.
    { folder: "runs/two", sub: "events", files: [{ name: `${10 * seq + 1}.json`, content: Buffer.from(`{"t":2,"r":${round}}`) }, { name: `${seq}.json`, content: Buffer.from(`{"t":1,"r":${round}}`) }] },
    // Two events of one run with the same bytes: one blob, two entries.
    { folder: "runs/same", sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"same":${round}}`) }, { name: `${10 * seq + 1}.json`, content: Buffer.from(`{"same":${round}}`) }] },
  ];
}

describe("fire commits built into pack entries, at the edges", () => {
  it.each([1, 1_000_000])("pass git fsck --strict --full and verify-pack, and their change lists are git's diff (pack threshold %i)", async (packThreshold) => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: seedFiles(), message: "seed" });
    const reader = store.subscribe(null, REPO, "main")[Symbol.asyncIterator]();
    const skipper = store.subscribe(null, REPO, "main")[Symbol.asyncIterator]();
    const ROUNDS = 3;
    for (let round = 1; round <= ROUNDS; round++) {
      await store.writeTreeDelta(null, REPO, "main", { message: `fire ${round}`, prevalidated: true, computeDelta: () => Promise.resolve({ appends: fireAppends(round) }) });
    }
    for (let round = 1; round <= ROUNDS; round++) {
      const seen = (await reader.next()).value as CommitChange;
      // A subscriber that never reads the list, then one that does: the same list, git's.
      const skipped = (await skipper.next()).value as CommitChange;
      expect(skipped.commitSha).toBe(seen.commitSha);
      const expected = await gitDiffTree(gitdir, seen.commitSha);
      expect(expected.length).toBe(ODD.length + 8);
      expect(seen.changes.map((c) => ({ path: c.path, oid: c.oid, status: c.status }))).toEqual(expected);
    }
    await reader.return?.();
    await skipper.return?.();
    await store.close();
    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
    expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
    const packDir = join(gitdir, "objects", "pack");
    for (const idx of (await readdir(packDir).catch(() => [] as string[])).filter((n) => n.endsWith(".idx"))) {
      const verified = await runGit(["verify-pack", join(packDir, idx)]);
      expect({ code: verified.code, stderr: verified.stderr }, idx).toEqual({ code: 0, stderr: "" });
    }
    // The folders git reads are the ones written: every run has its events, the two runs the same tree.
    expect(await gitAt(gitdir, ["rev-parse", "main:runs/d1"])).toBe(await gitAt(gitdir, ["rev-parse", "main:runs/d2"]));
    expect((await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/two/events/"])).split("\n").filter(Boolean)).toHaveLength(1 + 2 * ROUNDS);
    expect((await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/bigfolder/events/"])).split("\n").filter(Boolean)).toHaveLength(2_100 + ROUNDS);
    for (const id of ODD) expect((await gitAt(gitdir, ["show", `main:runs/${id}/events/${ROUNDS + 1}.json`])).trim()).toBe(`{"seq":${ROUNDS + 1},"run":"${id}","type":"TimerFired"}`);
  }, 60_000);
});

describe("a fired event whose name is already a folder in the run's events", () => {
  it("is declined by the packed build (as by the object build): no tree with the name twice", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r/events/1.json": "{}", "runs/r/events/2.json/x": "{}", "runs/s/events/1.json": "{}", "runs/s/events/2.json/x": "{}", "runs/t/events/2.json.bak": "{}", "runs/t/events/2.json-x/y": "{}", "runs/t/events/2.jso/y": "{}", "runs/t/events/2/y": "{}" }, message: "seed" });
    const content = Buffer.from(`{"seq":2}`);
    // One event (the one-file build) and two (the merge build).
    const appends: FolderAppend[] = [
      { folder: "runs/r", sub: "events", files: [{ name: "2.json", content }] },
      { folder: "runs/s", sub: "events", files: [{ name: "3.json", content }, { name: "2.json", content }] },
      // Names that sort around folders holding their prefix: built, in git's order.
      { folder: "runs/t", sub: "events", files: [{ name: "2.json", content }] },
    ];
    await store.writeTreeDelta(null, REPO, "main", { message: "fire", prevalidated: true, computeDelta: () => Promise.resolve({ appends }) });
    await store.close();
    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
    expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
    for (const run of ["r", "s"]) {
      const names = (await gitAt(gitdir, ["ls-tree", "main", `runs/${run}/events/`])).split("\n").filter(Boolean).map((l) => l.split("\t")[1]);
      expect(names.filter((n) => n === `runs/${run}/events/2.json`), run).toHaveLength(1);
    }
    expect((await gitAt(gitdir, ["show", "main:runs/t/events/2.json"])).trim()).toBe(content.toString());
  });
});

describe("fire commits of two deployments at once in one process", () => {
  it("build each run from its own folder (the caller names the events folder's oid), read cold, with turns between runs", async () => {
    const dataDir = await tempDir();
    const ids = ["dep-a", "dep-b"];
    const RUNS = 200;
    const open = () => createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    const seeding = open();
    for (const [d, id] of ids.entries()) {
      await seeding.initRepo(null, { kind: plainKind.kind, id });
      const files: Record<string, string> = {};
      for (let i = 0; i < RUNS; i++) files[`runs/r${i}/events/1.json`] = `{"seq":1,"d":${d},"i":${i}}`;
      await seeding.writeTree(null, { kind: plainKind.kind, id }, "main", { files, message: "seed" });
    }
    await seeding.close();
    const eventsOids = new Map<string, string>();
    for (const id of ids) {
      const gitdir = join(dataDir, "deployments", `${id}.git`);
      const out = await gitAt(gitdir, ["ls-tree", "-r", "-d", "main", "runs/"]);
      for (const line of out.split("\n").filter(Boolean)) {
        const [meta, path] = line.split("\t") as [string, string];
        if (path.endsWith("/events")) eventsOids.set(`${id}:${path}`, meta.split(" ")[2] as string);
      }
    }
    // A fresh store: nothing cached, every folder read is a promise.
    const store = open();
    await Promise.all(
      ids.map((id) =>
        store.writeTreeDelta(null, { kind: plainKind.kind, id }, "main", {
          message: "fire",
          prevalidated: true,
          pause: () => new Promise((resolve) => setImmediate(resolve)),
          computeDelta: () =>
            Promise.resolve({
              appends: Array.from({ length: RUNS }, (_, i): FolderAppend => ({
                folder: `runs/r${i}`,
                sub: "events",
                subOid: eventsOids.get(`${id}:runs/r${i}/events`) as string,
                files: [{ name: "2.json", content: Buffer.from(`{"seq":2,"dep":"${id}","i":${i}}`) }],
              })),
            }),
        }),
      ),
    );
    await store.close();
    for (const [d, id] of ids.entries()) {
      const gitdir = join(dataDir, "deployments", `${id}.git`);
      const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
      expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }, id).toEqual({ code: 0, stdout: "", stderr: "" });
      for (const i of [0, 63, 64, 199]) {
        expect((await gitAt(gitdir, ["show", `main:runs/r${i}/events/1.json`])).trim()).toBe(`{"seq":1,"d":${d},"i":${i}}`);
        expect((await gitAt(gitdir, ["show", `main:runs/r${i}/events/2.json`])).trim()).toBe(`{"seq":2,"dep":"${id}","i":${i}}`);
      }
    }
  }, 60_000);
});
