/**
 * A run damaged while the host is stopped, and not changed since the host's clean stop, is
 * restored at the next start from the recovery index without its log being read. The start
 * checks that the objects the restored state rests on are stored (the run folder, its `events/`
 * folder and its last event's blob; no read): one that is not makes the run a run read with an
 * object lost (lost-fire-event.test.ts): reported once at start, nothing of it armed or fired,
 * installed (its timers fired) once it reads whole. Built with the real git CLI as loose
 * objects, a real store opened again for the second start (empty caches, as a restarted host),
 * and the real scheduler on a fake clock. A damaged object that is still there is not seen by
 * that check (design notes §74); the last case shows what the scheduler then does.
 */
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { armedRuns, badOf, fired, LosingWriter, PAST, settleAdvancing, SOON, started, timerSet, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import { RECOVERY_INDEX_FILE } from "../../../src/workflow/recovery-index.js";

const deployment = usePlumbingDeployments(useTempDirs("wh-restored-damage-"), (gitdir) => new LosingWriter(gitdir));

/**
 * How each case damages the run `r-hurt` (its two events' blobs and its folders given; `runs`
 * commits `runs/` with a third run added to it), and what the start is then expected to report.
 */
type Damage = (
  w: LosingWriter,
  run: { tree: string; events: string; blobs: string[] },
  addRun: () => Promise<void>,
) => Promise<{ oid: string; path: string; seq: number | null; code: string; runs: number }>;

const LATER = "2026-01-01T12:05:00.000Z";

const objectFile = (w: LosingWriter, oid: string): string => join(w.gitdir, "objects", oid.slice(0, 2), oid.slice(2));

const cases: [string, Damage][] = [
  [
    "its last event's blob is lost",
    async (w, run) => {
      await w.lose(run.blobs[1] as string);
      return { oid: run.blobs[1] as string, path: "runs/r-hurt/events/2.json", seq: 2, code: "object_missing", runs: 1 };
    },
  ],
  [
    "its last event's blob is lost and another run was added meanwhile (the start lists runs/)",
    async (w, run, addRun) => {
      await addRun();
      await w.lose(run.blobs[1] as string);
      return { oid: run.blobs[1] as string, path: "runs/r-hurt/events/2.json", seq: 2, code: "object_missing", runs: 2 };
    },
  ],
  [
    "its events/ folder is lost",
    async (w, run) => {
      await w.lose(run.events);
      return { oid: run.events, path: "runs/r-hurt/events", seq: null, code: "object_missing", runs: 1 };
    },
  ],
];

describe("a run damaged while the host was stopped, restored from the recovery index", () => {
  it.each(cases)("%s: reported once at start, nothing of it armed or fired; restored, it fires once", async (_what, damage) => {
    const d = await deployment();
    const hurt = await d.w.run([started(), timerSet(2, "u", SOON)]);
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    await d.w.commit({ "r-hurt": hurt.tree, "r-ok": ok.tree });
    // A first start reads both runs whole and its clean stop writes the recovery index.
    const first = makeScheduler(d.store, d.clock);
    await first.scheduler.start();
    await first.scheduler.stop();
    expect(first.events.filter((e) => e.type === "bad_event")).toEqual([]);
    const indexFile = join(d.w.gitdir, "workflow-host", RECOVERY_INDEX_FILE);
    expect((await readFile(indexFile, "utf8")).includes("r-hurt")).toBe(true);
    // Damaged while stopped; the run is not changed, so the next start restores it unread.
    const kept = await readFile(objectFile(d.w, hurt.blobs[1] as string));
    const lostFolder = hurt.events;
    const keptFolder = await readFile(objectFile(d.w, lostFolder));
    const expected = await damage(d.w, hurt, async () => {
      const added = await d.w.run([started()]);
      await d.w.commit({ "r-hurt": hurt.tree, "r-ok": ok.tree, "r-new": added.tree });
    });
    const store = await d.reopen();
    const { scheduler, events } = makeScheduler(store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      // Reported by the start itself, before anything came due; nothing of the run armed.
      expect(badOf(events, "r-hurt")).toEqual([
        expect.objectContaining({ seq: expected.seq, path: expected.path, error: expect.objectContaining({ code: expected.code, data: expect.objectContaining({ runId: "r-hurt", oid: expected.oid, path: expected.path }) }) }),
      ]);
      expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ runs: expected.runs, badEvents: 1 })]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-ok/t"]);
      // Nothing was appended after the damaged event (`git fsck` would call such a log broken):
      // the run's folder at the tip is the one the damage was done to.
      const hurtAtTip = async (): Promise<string> => (await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-hurt"])).trim();
      expect(await hurtAtTip()).toBe(hurt.tree);
      // Reported once: the repair looks again at its backoff without reporting it again.
      await d.clock.advance(120_000);
      await scheduler.idle();
      expect(badOf(events, "r-hurt")).toHaveLength(1);
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(events.filter((e) => e.type === "commit_failed")).toEqual([]);
      expect(await hurtAtTip()).toBe(hurt.tree);
      // The object is written back (a loose file removed or torn is replaced whole): the run
      // reads whole, is installed, and its timer fires once.
      if (expected.path.endsWith("/events")) await writeFile(objectFile(d.w, lostFolder), keptFolder);
      else await writeFile(objectFile(d.w, hurt.blobs[1] as string), kept);
      expect((await runGit([`--git-dir=${d.w.gitdir}`, "fsck", "--full", "--no-dangling"])).code).toBe(0);
      await settleAdvancing(d.clock, scheduler, () => fired(events).includes("r-hurt/u"), "the restored run's timer fired", 1_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-hurt/u", "r-ok/t"]);
      expect(await d.w.eventFiles("r-hurt")).toEqual(["1.json", "2.json", "3.json"]);
      expect(badOf(events, "r-hurt")).toHaveLength(1);
    } finally {
      await scheduler.stop();
    }
  });
  it("its last event, a TimerFired this host committed before its clean stop, is lost: reported at start; restored, only the other timer fires", async () => {
    const d = await deployment();
    const hurt = await d.w.run([started(), timerSet(2, "once", PAST), timerSet(3, "later", LATER)]);
    const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
    await d.w.commit({ "r-hurt": hurt.tree, "r-ok": ok.tree });
    // The first host fires `once` (4.json, in its commit's pack) and stops cleanly: the index
    // keeps the run as that commit left it, with 4.json's blob as its last event.
    const first = makeScheduler(d.store, d.clock);
    await first.scheduler.start();
    await d.clock.advance(0);
    await first.scheduler.idle();
    expect(fired(first.events)).toEqual(["r-hurt/once"]);
    await first.scheduler.stop();
    const firedOid = (await gitAt(d.w.gitdir, ["rev-parse", "main:runs/r-hurt/events/4.json"])).trim();
    // Its pack unpacked into loose objects (git's own unpack-objects), so one object can be removed.
    const packDir = join(d.w.gitdir, "objects", "pack");
    for (const name of (await readdir(packDir)).filter((n) => n.endsWith(".pack"))) {
      const pack = await readFile(join(packDir, name));
      await rm(join(packDir, name));
      await rm(join(packDir, name.replace(/\.pack$/, ".idx")));
      expect((await runGit([`--git-dir=${d.w.gitdir}`, "unpack-objects", "-q"], { input: pack })).code).toBe(0);
    }
    const kept = await readFile(objectFile(d.w, firedOid));
    await d.w.lose(firedOid);
    const store = await d.reopen();
    const { scheduler, events } = makeScheduler(store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(badOf(events, "r-hurt")).toEqual([
        expect.objectContaining({ seq: 4, path: "runs/r-hurt/events/4.json", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: firedOid }) }) }),
      ]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      await d.clock.advance(10 * 60_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-ok/t"]);
      await writeFile(objectFile(d.w, firedOid), kept);
      await settleAdvancing(d.clock, scheduler, () => fired(events).includes("r-hurt/later"), "the restored run's timer fired", 1_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-hurt/later", "r-ok/t"]);
      expect(await d.w.eventFiles("r-hurt")).toEqual(["1.json", "2.json", "3.json", "4.json", "5.json"]);
    } finally {
      await scheduler.stop();
    }
  });
});
