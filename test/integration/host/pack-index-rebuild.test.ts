/**
 * A deployment whose pack index is damaged or lost (a flipped byte, truncated, another version,
 * removed) while its pack is whole: the store rebuilds the index from the pack as
 * `git index-pack` does — the same bytes — and the host recovers and fires as if nothing had
 * happened, telling it once by a process warning naming the pack. A pack that fails its own
 * checksum is not indexed from: the damaged index stays reported as before, nothing rewritten.
 */
import { copyFile, readdir, readFile, rename, truncate, unlink, utimes, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeScheduler, repoIdOf } from "../../helpers/fixture-scheduler.js";
import { git, gitAt, runGit } from "../../helpers/git-cli.js";
import { armedRuns, badOf, event, fired, GitWriter, PAST, settleAdvancing, started, timerSet, usePlumbingDeployments, writtenOnce } from "../../helpers/plumbing-deployment.js";
import { flipInPack, packListing } from "../../helpers/pack-damage.js";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { collectWarnings } from "../../helpers/process-warnings.js";

const tempDir = useTempDirs("wh-idx-rebuild-");

/** Objects written with git's plumbing, then packed by `git repack` with deltas. */
class PackingWriter extends GitWriter {
  get packDir(): string {
    return join(this.gitdir, "objects", "pack");
  }
  /** Packs every object with deltas (ofs-deltas, or ref-deltas when `refDeltas`); returns the pack's path without extension. */
  async pack(refDeltas = false): Promise<string> {
    await gitAt(this.gitdir, [...(refDeltas ? ["-c", "repack.useDeltaBaseOffset=false"] : []), "repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=50"]);
    const names = (await readdir(this.packDir)).filter((n) => n.endsWith(".pack"));
    expect(names).toHaveLength(1);
    return join(this.packDir, (names[0] as string).replace(/\.pack$/, ""));
  }
  /** `git fsck --full --strict`: exit code and everything it printed. */
  async fsck(): Promise<{ code: number; out: string }> {
    const r = await runGit([`--git-dir=${this.gitdir}`, "fsck", "--full", "--strict", "--no-dangling"]);
    return { code: r.code, out: `${r.stdout}\n${r.stderr}` };
  }
}

const deployment = usePlumbingDeployments(tempDir, (gitdir) => new PackingWriter(gitdir));

/** A long event (so git finds deltas between the events of different runs). */
const note = (seq: number, run: string): string => event(seq, "Noted", { run, text: `${"the same long text of every run, ".repeat(12)}${run}` });

interface PackedHistory {
  /** The pack's path without extension. */
  readonly base: string;
  /** `runId/timerId` of every timer due, sorted. */
  readonly due: string[];
  /** Each run's folders and event blobs. */
  readonly objects: Record<string, string[]>;
}

/**
 * Writes with `w` a deployment with history (two commits, six runs with similar events: packed
 * with deltas), each run with one timer due.
 */
async function writeHistoryPacked(w: PackingWriter, refDeltas: boolean): Promise<PackedHistory> {
  const runs: Record<string, string> = {};
  const objects: Record<string, string[]> = {};
  const due: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await w.run([started(), note(2, `r${i}`), timerSet(3, `t${i}`, PAST)]);
    runs[`r${i}`] = r.tree;
    objects[`r${i}`] = [r.tree, r.events, ...r.blobs];
    due.push(`r${i}/t${i}`);
  }
  await w.commit(runs);
  for (let i = 3; i < 6; i++) {
    const r = await w.run([started(), note(2, `r${i}`), note(3, `r${i}-again`), timerSet(4, `t${i}`, PAST)]);
    runs[`r${i}`] = r.tree;
    objects[`r${i}`] = [r.tree, r.events, ...r.blobs];
    due.push(`r${i}/t${i}`);
  }
  const parent = (await gitAt(w.gitdir, ["rev-parse", "main"])).trim();
  const { root } = await w.commit(runs);
  const commit = (await gitAt(w.gitdir, ["commit-tree", root, "-p", parent, "-m", "second"])).trim();
  await gitAt(w.gitdir, ["update-ref", "refs/heads/main", commit]);
  const base = await w.pack(refDeltas);
  // The pack holds deltas (the rebuild resolves them).
  const listing = await git(["verify-pack", "-v", `${base}.idx`]);
  expect(listing).toMatch(/chain length = 1:/);
  // Each delta entry's type (bits 4–6 of its first byte): 6 by offset, 7 by oid.
  const pack = await readFile(`${base}.pack`);
  const deltaTypes = new Set(listing.split("\n").flatMap((l) => (/^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l.trim()) ? [((pack[Number(l.trim().split(/\s+/)[4])] as number) >> 4) & 7] : [])));
  expect([...deltaTypes]).toEqual([refDeltas ? 7 : 6]);
  return { base, due: due.sort(), objects };
}

/**
 * {@link writeHistoryPacked}'s deployment in `d`, copied in from a repository written once per
 * delta kind for the file: the copy's files are as new as a pack just written (the cases that
 * need an older pack set its mtime). Returns the pack's path (no extension) and the timers due.
 */
async function historyPacked(d: Awaited<ReturnType<typeof deployment>>, refDeltas = false): Promise<PackedHistory> {
  const { base, due, objects } = await (refDeltas ? refDeltaHistory : ofsDeltaHistory)(d.w.gitdir);
  return { base: join(d.w.packDir, basename(base)), due: [...due], objects };
}

/** {@link historyPacked}'s repository for each delta kind, written once for the file (see writtenOnce). */
const ofsDeltaHistory = writtenOnce("wh-idx-rebuild-pristine-", (gitdir) => writeHistoryPacked(new PackingWriter(gitdir), false));
const refDeltaHistory = writtenOnce("wh-idx-rebuild-pristine-", (gitdir) => writeHistoryPacked(new PackingWriter(gitdir), true));

/** The index `git index-pack` builds for a copy of the pack at `base` (no extension). */
async function indexByGit(base: string): Promise<Buffer> {
  const dir = await tempDir();
  await copyFile(`${base}.pack`, join(dir, "copy.pack"));
  await git(["index-pack", "-o", join(dir, "copy.idx"), join(dir, "copy.pack")], { cwd: dir });
  return readFile(join(dir, "copy.idx"));
}

/** Starts a scheduler on `d`, runs what is due, and hands its events to `check`. */
async function recoverAndFire(d: Awaited<ReturnType<typeof deployment>>, check: (events: ReturnType<typeof makeScheduler>["events"]) => void): Promise<void> {
  const { scheduler, events } = makeScheduler(d.store, d.clock);
  await scheduler.start();
  try {
    await d.clock.advance(0);
    await scheduler.idle();
    check(events);
  } finally {
    await scheduler.stop();
  }
}

const damages: readonly { what: string; damage: (base: string) => Promise<void>; refDeltas?: boolean }[] = [
  {
    what: "one byte flipped",
    damage: async (base) => {
      const bytes = await readFile(`${base}.idx`);
      bytes[8 + 1024 + 5] = (bytes[8 + 1024 + 5] as number) ^ 0x5a;
      await writeFile(`${base}.idx`, bytes);
    },
  },
  { what: "truncated to half", damage: async (base) => truncate(`${base}.idx`, Math.floor((await readFile(`${base}.idx`)).length / 2)) },
  {
    what: "of another version",
    damage: async (base) => {
      const bytes = await readFile(`${base}.idx`);
      bytes.writeUInt32BE(3, 4);
      await writeFile(`${base}.idx`, bytes);
    },
  },
  {
    what: "removed (the pack a few minutes old)",
    damage: async (base) => {
      await unlink(`${base}.idx`);
      const old = new Date(Date.now() - 5 * 60_000);
      await utimes(`${base}.pack`, old, old);
    },
  },
  {
    what: "one byte flipped, in a pack of ref-deltas",
    refDeltas: true,
    damage: async (base) => {
      const bytes = await readFile(`${base}.idx`);
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
      await writeFile(`${base}.idx`, bytes);
    },
  },
];

describe("a pack index damaged or lost, its pack whole", () => {
  for (const { what, damage, refDeltas } of damages) {
    it(`(${what}) is rebuilt from the pack as git index-pack builds it; every run recovers and fires; fsck passes; told once`, async () => {
      const d = await deployment();
      const { base, due } = await historyPacked(d, refDeltas);
      const original = await readFile(`${base}.idx`);
      await damage(base);
      expect((await d.w.fsck()).code).not.toBe(0);

      await collectWarnings(async (warnings) => {
        await recoverAndFire(d, (events) => {
          expect(events.filter((e) => e.type === "repo_failed" || e.type === "bad_event")).toEqual([]);
          expect(fired(events)).toEqual(due);
        });
        await new Promise((resolve) => setImmediate(resolve));
        const packName = base.split("/").at(-1) as string;
        const told = warnings.filter((w) => w.message.includes(packName));
        expect(told).toHaveLength(1);
        expect(told[0]).toMatchObject({ code: "WORKFLOW_HOST_PACK_INDEX" });
      });
      const rebuilt = await readFile(`${base}.idx`);
      expect(rebuilt.equals(await indexByGit(base))).toBe(true);
      expect(rebuilt.equals(original)).toBe(true);
      const fsck = await d.w.fsck();
      expect(fsck.out).toBe("\n");
      expect(fsck.code).toBe(0);
      // Every object of the pack reads back through the store (by oid, as git lists them).
      const listing = await git(["verify-pack", "-v", `${base}.idx`]);
      const oids = listing.split("\n").flatMap((l) => (/^[0-9a-f]{40} /.test(l) ? [l.slice(0, 40)] : []));
      const reads = await d.store.openCommittedReads(null, repoIdOf("d"), "main");
      let blobs = 0;
      for (const oid of oids) {
        const type = (await gitAt(d.w.gitdir, ["cat-file", "-t", oid])).trim();
        if (type !== "blob") continue;
        expect(Buffer.from(await reads.readBlobByOid(oid)).toString()).toBe(await gitAt(d.w.gitdir, ["cat-file", "blob", oid]));
        blobs++;
      }
      expect(blobs).toBeGreaterThan(10);
      // Nothing left in objects/ by the rebuild.
      expect((await readdir(join(d.w.gitdir, "objects"))).filter((n) => n.startsWith("tmp_idx_rebuilt"))).toEqual([]);
    });
  }

  it("a whole pack without its index, ten seconds old (a copy made without it), is indexed in memory: every run fires; nothing is written for it while it is young", async () => {
    const d = await deployment();
    const { base, due } = await historyPacked(d);
    await unlink(`${base}.idx`);
    const young = new Date(Date.now() - 10_000);
    await utimes(`${base}.pack`, young, young);
    const name = base.split("/").at(-1) as string;
    const told = await collectWarnings(async (warnings) => {
      await recoverAndFire(d, (events) => {
        expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
        expect(fired(events)).toEqual(due);
      });
      return warnings.filter((w) => w.message.includes(name));
    });
    // Its writer's index may be on its way: none written, nothing told.
    expect((await readdir(d.w.packDir)).filter((n) => n.startsWith(name) && (n.endsWith(".idx") || n.endsWith(".rev")))).toEqual([]);
    expect(told).toEqual([]);
  });

  for (const { what, damage } of [
    { what: "placed this instant (its writer's index follows within milliseconds)", damage: async () => undefined },
    {
      what: "ten seconds old and failing its checksum (a tool writing it in place)",
      damage: async (base: string) => {
        await truncate(`${base}.pack`, (await readFile(`${base}.pack`)).length - 7);
        const young = new Date(Date.now() - 10_000);
        await utimes(`${base}.pack`, young, young);
      },
    },
  ]) {
    it(`a pack without its index ${what} is left for its writer (not indexed)`, async () => {
      const d = await deployment();
      const { base } = await historyPacked(d);
      await unlink(`${base}.idx`);
      await damage(base);
      await recoverAndFire(d, (events) => {
        expect(events.filter((e) => e.type === "repo_failed").length).toBeGreaterThan(0);
      });
      expect((await readdir(d.w.packDir)).filter((n) => n.endsWith(".idx"))).toEqual([]);
    });
  }
});

/** The names and bytes of every file in `dir`. */
async function filesOf(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const name of (await readdir(dir)).sort()) files.set(name, await readFile(join(dir, name)));
  return files;
}

/** The runs (of `objects`, each run's folders and events) holding `oid`. */
const ownersOf = (objects: Record<string, string[]>, oid: string): string[] => Object.keys(objects).filter((run) => objects[run]?.includes(oid));

/**
 * Recovers `d`, whose pack at `base` fails its checksum and whose index is damaged or lost, and
 * checks that one pack's damage is its runs' problem: the deployment opens, the timers of every
 * run but `damaged` fire, each damaged run is reported (`object_corrupt` or `object_missing`) and
 * not armed, one warning names the pack with what was indexed and what could not be read,
 * nothing is written into `objects/pack` (nor left in `objects/`), and `check` names the damaged
 * runs and the pack.
 */
async function servedAroundDamage(d: Awaited<ReturnType<typeof deployment>>, base: string, due: readonly string[], damaged: readonly string[]): Promise<void> {
  const packName = base.split("/").at(-1) as string;
  const before = await filesOf(d.w.packDir);
  await collectWarnings(async (warnings) => {
    await recoverAndFire(d, (events) => {
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(fired(events)).toEqual(due.filter((t) => !damaged.includes(t.split("/")[0] as string)));
      expect(armedRuns(events).filter((r) => damaged.includes(r))).toEqual([]);
      for (const run of damaged) {
        const bad = badOf(events, run);
        expect(bad.length).toBeGreaterThan(0);
        for (const b of bad) expect(["object_corrupt", "object_missing"]).toContain(b.error.code);
      }
      const reported = [...new Set(events.flatMap((e) => (e.type === "bad_event" ? [e.runId] : [])))].sort();
      expect(reported).toEqual([...damaged].sort());
    });
    await new Promise((resolve) => setImmediate(resolve));
    const told = warnings.filter((w) => w.message.includes(packName));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ code: "WORKFLOW_HOST_PACK_INDEX" });
    expect(told[0]?.message).toMatch(/\d+ objects? indexed/);
    expect(told[0]?.message).toMatch(/\d+ entr(y|ies) could not be read/);
  });
  const report = await checkDeployments(d.store, { repoId: "d" });
  expect(report.problems.filter((p) => p.deploymentUnreadable === true)).toEqual([]);
  const named = [...new Set(report.problems.map((p) => p.path.split("/")[1]))].sort();
  expect(named).toEqual([...damaged].sort());
  for (const problem of report.problems) {
    expect(["object_corrupt", "object_missing"]).toContain(problem.code);
    expect(problem.message).toContain(packName);
  }
  // Nothing written for the bad pack: git would refuse it, and a rebuilt index must not make it look sound.
  // (The fires' commits add packs of their own.)
  const after = await filesOf(d.w.packDir);
  expect([...after.keys()].filter((name) => name.startsWith(packName))).toEqual([...before.keys()]);
  for (const [name, bytes] of before) expect(after.get(name)?.equals(bytes)).toBe(true);
  expect((await readdir(join(d.w.gitdir, "objects"))).filter((n) => n.startsWith("tmp_idx_rebuilt") || n.startsWith("tmp_rev"))).toEqual([]);
  expect((await d.w.fsck()).code).not.toBe(0);
}

/** An event blob of one run only, no delta's base, with other runs' objects after it in the pack (a walk must read on past it). */
async function loneEvent(base: string, objects: Record<string, string[]>): Promise<string> {
  const entries = await packListing(`${base}.pack`);
  const bases = new Set(entries.flatMap((e) => (e.base === undefined ? [] : [e.base])));
  const blobs = entries.filter((e) => e.type === "blob");
  const victim = blobs.find((e, k) => {
    const owners = ownersOf(objects, e.oid);
    return !bases.has(e.oid) && owners.length === 1 && blobs.slice(k + 1).some((later) => !ownersOf(objects, later.oid).includes(owners[0] as string));
  });
  expect(victim).toBeDefined();
  return (victim as { oid: string }).oid;
}

describe("a pack index damaged or lost, its pack failing its checksum too", () => {
  it("(one byte of one event's entry flipped, the index truncated) is indexed in memory from the entries that read: the run holding that event is named, every other run fires, nothing is written", async () => {
    const d = await deployment();
    const { base, due, objects } = await historyPacked(d);
    const victim = await loneEvent(base, objects);
    await flipInPack(`${base}.pack`, victim);
    await truncate(`${base}.idx`, 2000);
    await servedAroundDamage(d, base, due, ownersOf(objects, victim));
  });

  it("(one byte of one event's entry flipped, the index truncated) is read whole again once the pack and its index are restored from a copy: the named run's timer fires", async () => {
    const d = await deployment();
    const { base, due, objects } = await historyPacked(d);
    const victim = await loneEvent(base, objects);
    const [run] = ownersOf(objects, victim) as [string];
    const copies = { pack: await readFile(`${base}.pack`), idx: await readFile(`${base}.idx`) };
    await flipInPack(`${base}.pack`, victim);
    await truncate(`${base}.idx`, 2000);
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(fired(events)).toEqual(due.filter((t) => !t.startsWith(`${run}/`)));
      expect(badOf(events, run).length).toBeGreaterThan(0);
      // Restored as from a backup: each file written aside and renamed into place.
      for (const [ext, bytes] of Object.entries(copies)) {
        await writeFile(`${base}.${ext}.restored`, bytes);
        await rename(`${base}.${ext}.restored`, `${base}.${ext}`);
      }
      expect((await d.w.fsck()).code).toBe(0);
      await settleAdvancing(d.clock, scheduler, () => fired(events).length >= due.length, "the restored run's timer fired");
      expect(fired(events)).toEqual(due);
    } finally {
      await scheduler.stop();
    }
  });

  it("(the pack truncated by a crash, its index lost) is indexed in memory up to the cut: the runs whose events were past it are named, the others fire, nothing is written", async () => {
    const d = await deployment();
    const { base, due, objects } = await historyPacked(d);
    const entries = await packListing(`${base}.pack`);
    // Cut inside an object of one run that comes after every object main needs beyond its runs
    // (its commit, root, `runs/` folder, an event all runs share); the first commit's may follow.
    const reachable = new Set((await gitAt(d.w.gitdir, ["rev-list", "--objects", "--no-walk", "main"])).split("\n").map((l) => l.slice(0, 40)));
    const lastShared = Math.max(...entries.filter((e) => reachable.has(e.oid) && ownersOf(objects, e.oid).length !== 1).map((e) => e.offset));
    const single = entries.filter((e) => e.offset > lastShared);
    expect(single.length).toBeGreaterThan(2);
    const cut = single[Math.floor(single.length / 2)] as (typeof single)[number];
    const damaged = [...new Set(entries.filter((e) => e.offset >= cut.offset).flatMap((e) => ownersOf(objects, e.oid)))].sort();
    expect(damaged.length).toBeGreaterThan(0);
    expect(damaged.length).toBeLessThan(Object.keys(objects).length);
    await truncate(`${base}.pack`, cut.offset + 3);
    await unlink(`${base}.idx`);
    const old = new Date(Date.now() - 5 * 60_000);
    await utimes(`${base}.pack`, old, old);
    await servedAroundDamage(d, base, due, damaged);
  });
});
