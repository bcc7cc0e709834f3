/**
 * A deployment with one damaged object (a flipped byte inside a pack, a truncated loose file),
 * built with the real git CLI and damaged on disk: the deployment keeps serving every other run,
 * as with a missing object (missing-objects.test.ts). The pack that fails its trailer checksum is
 * still read object by object, each checked on its own; a damaged event blob is that run's bad
 * event at its seq (`object_corrupt`, naming oid and path), and nothing of that run is armed
 * until it reads whole; a damaged `events/` folder skips the run until it reads again; `git
 * fsck` names the same object. A damaged `runs/` folder still fails the deployment (nothing can
 * be read).
 */
import { readdir, truncate } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeScheduler, repoIdOf } from "../../helpers/fixture-scheduler.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import { armedRuns, badOf, fired, GitWriter, PAST, settle, SOON, started, timerSet, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { collectWarnings } from "../../helpers/process-warnings.js";
import { flipInPack } from "../../helpers/pack-damage.js";

/** Objects written with git's plumbing, packed with `git repack`, one then damaged on disk. */
class DamagingWriter extends GitWriter {
  /** Packs every object (no deltas: each object is one whole entry) and removes the loose ones. */
  async pack(): Promise<string> {
    await gitAt(this.gitdir, ["repack", "-a", "-d", "-q", "--window=0"]);
    const names = (await readdir(join(this.gitdir, "objects", "pack"))).filter((n) => n.endsWith(".pack"));
    expect(names).toHaveLength(1);
    return join(this.gitdir, "objects", "pack", names[0] as string);
  }
  /** See flipInPack (test/helpers/pack-damage.ts). */
  flipInPack(packPath: string, oid: string): Promise<() => Promise<void>> {
    return flipInPack(packPath, oid);
  }
  /** Truncates a loose object's file to 10 bytes (`head -c 10`). */
  async truncateLoose(oid: string): Promise<void> {
    await truncate(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)), 10);
  }
  /** `git fsck --full`: exit code and everything it printed. */
  async fsck(): Promise<{ code: number; out: string }> {
    const r = await runGit([`--git-dir=${this.gitdir}`, "fsck", "--full", "--no-dangling"]);
    return { code: r.code, out: `${r.stdout}\n${r.stderr}` };
  }
}

const deployment = usePlumbingDeployments(useTempDirs("wh-corrupt-obj-"), (gitdir) => new DamagingWriter(gitdir));

describe("a deployment with one damaged object", () => {
  it("reads a pack that fails its checksum object by object: a flipped event blob is its run's bad event, that run is not armed, the other runs fire", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const hurt = await d.w.run([started(), timerSet(2, "flipped", PAST), timerSet(3, "kept", PAST)]);
    const { commit } = await d.w.commit({ "r-ok": ok.tree, "r-hurt": hurt.tree });
    const packPath = await d.w.pack();
    const damaged = hurt.blobs[1] as string;
    await d.w.flipInPack(packPath, damaged);
    // git agrees: that object, and only it, is bad; every other object still reads.
    const fsck = await d.w.fsck();
    expect(fsck.code).not.toBe(0);
    expect(fsck.out).toContain(damaged);
    for (const other of [...ok.blobs, hurt.blobs[0], hurt.blobs[2]]) expect(fsck.out).not.toContain(other);
    expect((await gitAt(d.w.gitdir, ["cat-file", "-p", hurt.blobs[2] as string])).trim()).toBe(timerSet(3, "kept", PAST));

    await collectWarnings(async (warnings) => {
      const { scheduler, events } = makeScheduler(d.store, d.clock);
      await scheduler.start();
      try {
        await d.clock.advance(0);
        await scheduler.idle();
        expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
        // The damaged run is not installed (as a run whose folder is lost): one run held.
        expect(events.filter((e) => e.type === "recovered")).toEqual([expect.objectContaining({ repoId: "d", commitSha: commit, runs: 1 })]);
        const bad = badOf(events, "r-hurt");
        expect(bad).toHaveLength(1);
        expect(bad[0]).toMatchObject({ seq: 2, path: "runs/r-hurt/events/2.json", error: { code: "object_corrupt", data: { oid: damaged, path: "runs/r-hurt/events/2.json", runId: "r-hurt" } } });
        expect(bad[0]?.error.message).toContain(damaged);
        expect(bad[0]?.error.message).toContain("runs/r-hurt/events/2.json");
        // Nothing of the damaged run is armed until it reads whole (design notes §69).
        expect(armedRuns(events)).toEqual(["r-ok"]);
        expect(fired(events)).toEqual(["r-ok/t"]);
        // The pack's failed checksum is told once, naming the pack.
        const packName = packPath.split("/").at(-1)?.replace(/\.pack$/, "") as string;
        expect(warnings.filter((w) => w.message.includes(packName))).toHaveLength(1);
      } finally {
        await scheduler.stop();
      }
    });
  });

  it("reads a truncated loose event object as its run's bad event; that run is not armed, the other runs fire", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const hurt = await d.w.run([started(), timerSet(2, "torn", PAST), timerSet(3, "kept", PAST)]);
    await d.w.commit({ "r-ok": ok.tree, "r-hurt": hurt.tree });
    const damaged = hurt.blobs[1] as string;
    await d.w.truncateLoose(damaged);
    const fsck = await d.w.fsck();
    expect(fsck.code).not.toBe(0);
    expect(fsck.out).toContain(damaged);
    for (const other of [...ok.blobs, hurt.blobs[0], hurt.blobs[2]]) expect(fsck.out).not.toContain(other);

    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      const bad = badOf(events, "r-hurt");
      expect(bad).toEqual([expect.objectContaining({ seq: 2, path: "runs/r-hurt/events/2.json", error: expect.objectContaining({ code: "object_corrupt", data: expect.objectContaining({ oid: damaged }) }) })]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(fired(events)).toEqual(["r-ok/t"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("skips a run whose events folder is damaged inside a pack, and reads it again once the pack is repaired", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const hurt = await d.w.run([started(), timerSet(2, "late", PAST)]);
    await d.w.commit({ "r-ok": ok.tree, "r-hurt": hurt.tree });
    const packPath = await d.w.pack();
    const repair = await d.w.flipInPack(packPath, hurt.events);
    expect((await d.w.fsck()).out).toContain(hurt.events);
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      await d.clock.advance(0);
      await scheduler.idle();
      expect(events.filter((e) => e.type === "repo_failed")).toEqual([]);
      expect(armedRuns(events)).toEqual(["r-ok"]);
      expect(fired(events)).toEqual(["r-ok/t"]);
      expect(badOf(events, "r-hurt")).toEqual([
        expect.objectContaining({ seq: null, path: "runs/r-hurt/events", error: expect.objectContaining({ code: "object_corrupt", data: expect.objectContaining({ oid: hurt.events }) }) }),
      ]);
      // Still damaged at the next tries: read again later, not reported again.
      await d.clock.advance(1_600);
      await scheduler.idle();
      expect(badOf(events, "r-hurt")).toHaveLength(1);
      // The pack is restored (its byte put back): the run is read whole and its timer fires.
      await repair();
      expect((await d.w.fsck()).code).toBe(0);
      await d.clock.advance(5_000);
      await settle(d.clock, scheduler, () => fired(events).length >= 2, "the repaired run's timer fired");
      expect(fired(events)).toEqual(["r-hurt/late", "r-ok/t"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("never serves a damaged object's bytes: reading it by oid is object_corrupt naming it", async () => {
    const d = await deployment();
    const hurt = await d.w.run([started(), timerSet(2, "flipped", PAST)]);
    await d.w.commit({ "r-hurt": hurt.tree });
    const packPath = await d.w.pack();
    await d.w.flipInPack(packPath, hurt.blobs[1] as string);
    const reads = await d.store.openCommittedReads(null, repoIdOf("d"), "main");
    await expect(reads.readBlobByOid(hurt.blobs[1] as string)).rejects.toMatchObject({ code: "object_corrupt", data: expect.objectContaining({ oid: hurt.blobs[1] }) });
    expect(Buffer.from(await reads.readBlobByOid(hurt.blobs[0] as string)).toString()).toBe(started());
  });

  it("commits the other runs' fires when one run's folders are found torn under a running host", async () => {
    const d = await deployment();
    const a = await d.w.run([started(), timerSet(2, "ta", SOON)]);
    const b = await d.w.run([started(), timerSet(2, "tb", SOON)]);
    const c = await d.w.run([started(), timerSet(2, "tc", SOON)]);
    await d.w.commit({ "r-a": a.tree, "r-b": b.tree, "r-c": c.tree });
    const { scheduler, events } = makeScheduler(d.store, d.clock, { retryInitialMs: 500, retryMaxMs: 30_000 });
    await scheduler.start();
    try {
      expect(armedRuns(events)).toEqual(["r-a", "r-b", "r-c"]);
      // Torn after recovery read them: the fire commit meets them when it appends to the folder.
      await d.w.truncateLoose(b.events);
      await d.w.truncateLoose(b.tree);
      await d.clock.advance(61_000);
      await scheduler.idle();
      expect(fired(events)).toEqual(["r-a/ta", "r-c/tc"]);
      const failed = events.filter((e) => e.type === "commit_failed");
      expect(failed.length).toBeGreaterThan(0);
      for (const f of failed) expect(f).toMatchObject({ repoId: "d", runId: "r-b", retryInMs: 30_000, error: { code: "object_corrupt", data: { damaged: true } } });
    } finally {
      await scheduler.stop();
    }
  });

  it("fails the whole deployment (retried) when its runs/ folder is damaged", async () => {
    const d = await deployment();
    const ok = await d.w.run([started(), timerSet(2, "t", PAST)]);
    const { runsTree } = await d.w.commit({ "r-ok": ok.tree });
    const packPath = await d.w.pack();
    await d.w.flipInPack(packPath, runsTree);
    const { scheduler, events } = makeScheduler(d.store, d.clock);
    await scheduler.start();
    try {
      expect(events.filter((e) => e.type === "recovered")).toEqual([]);
      expect(events).toContainEqual(expect.objectContaining({ type: "repo_failed", repoId: "d", error: expect.objectContaining({ code: "object_corrupt" }) }));
      expect(fired(events)).toEqual([]);
    } finally {
      await scheduler.stop();
    }
  });
});

