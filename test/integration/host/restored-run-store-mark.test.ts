/**
 * The start's check of restored rows (restored-run-damage.test.ts) looks the rows' objects up
 * only when the files holding the objects changed since the recovery index was written: the
 * index carries the object files' mark (`CommittedReads.storeMark`: the names of the packs and
 * loose objects). A deployment of packs only, unchanged while the host was
 * stopped, is restored without a lookup; the same deployment with its pack rewritten without
 * one run's last event (`git pack-objects` of every other object) has a new mark, is looked up,
 * and the run is reported and not armed. Real git CLI, real stores opened again as a restarted
 * host, the real scheduler on a fake clock.
 */
import { readdir, readFile, rm, rmdir, truncate, utimes } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeScheduler } from "../../helpers/fixture-scheduler.js";
import { armedRuns, badOf, LosingWriter, SOON, started, timerSet, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import { flipInPack } from "../../helpers/pack-damage.js";
import { RECOVERY_INDEX_FILE } from "../../../src/workflow/recovery-index.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";

const deployment = usePlumbingDeployments(useTempDirs("wh-restored-mark-"), (gitdir) => new LosingWriter(gitdir));

/** Every object in one pack, no loose object folder left (what a host's own commits and merges leave). */
async function packAll(gitdir: string): Promise<void> {
  expect((await runGit([`--git-dir=${gitdir}`, "repack", "-a", "-d", "-q"])).code).toBe(0);
  expect((await runGit([`--git-dir=${gitdir}`, "prune-packed"])).code).toBe(0);
  const objects = join(gitdir, "objects");
  for (const name of await readdir(objects)) if (/^[0-9a-f]{2}$/.test(name)) await rmdir(join(objects, name));
}

/** The store with every committed read's object lookups (`stored`, `packedAll`) counted. */
function counted(store: RepoStore): { store: RepoStore; lookups: () => number } {
  let lookups = 0;
  const wrap = (reads: CommittedReads): CommittedReads => {
    const { stored, packedAll } = reads;
    return {
      ...reads,
      ...(stored === undefined ? {} : { stored: (oid: string) => ((lookups += 1), stored.call(reads, oid)) }),
      ...(packedAll === undefined ? {} : { packedAll: (hex: string) => ((lookups += 1), packedAll.call(reads, hex)) }),
      ...(reads.scan === undefined ? {} : { scan: () => wrap((reads.scan as () => CommittedReads).call(reads)) }),
    };
  };
  const proxy = new Proxy(store, {
    get(target, prop) {
      if (prop === "openCommittedReads") return async (...args: Parameters<RepoStore["openCommittedReads"]>) => wrap(await target.openCommittedReads(...args));
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: proxy, lookups: () => lookups };
}

/**
 * Runs `r-hurt` and `r-ok`, each `[WorkflowStarted, TimerSet]`, in one pack; a first start reads
 * both whole and its clean stop writes the recovery index with the object files' mark.
 */
async function indexedPacks(): Promise<{ d: Awaited<ReturnType<typeof deployment>>; hurt: Awaited<ReturnType<LosingWriter["run"]>> }> {
  const d = await deployment();
  const hurt = await d.w.run([started(), timerSet(2, "u", SOON)]);
  const ok = await d.w.run([started(), timerSet(2, "t", SOON)]);
  await d.w.commit({ "r-hurt": hurt.tree, "r-ok": ok.tree });
  await packAll(d.w.gitdir);
  const first = makeScheduler(d.store, d.clock);
  await first.scheduler.start();
  await first.scheduler.stop();
  return { d, hurt };
}

describe("the start's check of restored rows and the object files' mark", () => {
  it("looks nothing up when the files are the ones the index was written with, and finds a run's lost last event when a pack was rewritten without it", async () => {
    const { d, hurt } = await indexedPacks();
    const indexFile = join(d.w.gitdir, "workflow-host", RECOVERY_INDEX_FILE);
    expect(await readFile(indexFile, "utf8")).toMatch(/"storeMark":"[0-9a-f]{40}"/);

    // Nothing changed: both runs restored unread, not one object looked up.
    const same = counted(await d.reopen());
    const second = makeScheduler(same.store, d.clock);
    await second.scheduler.start();
    expect(armedRuns(second.events)).toEqual(["r-hurt", "r-ok"]);
    expect(badOf(second.events, "r-hurt")).toEqual([]);
    expect(same.lookups()).toBe(0);
    await second.scheduler.stop();

    // The pack rewritten without r-hurt's last event (every other reachable object kept).
    const lost = hurt.blobs[1] as string;
    const listed = (await gitAt(d.w.gitdir, ["rev-list", "--objects", "--all"])).split("\n").map((line) => line.split(" ")[0] as string).filter((oid) => oid !== "" && oid !== lost);
    const packDir = join(d.w.gitdir, "objects", "pack");
    const old = await readdir(packDir);
    expect((await runGit([`--git-dir=${d.w.gitdir}`, "pack-objects", "-q", join(packDir, "pack")], { input: `${listed.join("\n")}\n` })).code).toBe(0);
    for (const name of old) await rm(join(packDir, name));
    expect((await runGit([`--git-dir=${d.w.gitdir}`, "cat-file", "-e", lost])).code).not.toBe(0);

    const changed = counted(await d.reopen());
    const third = makeScheduler(changed.store, d.clock);
    await third.scheduler.start();
    try {
      expect(changed.lookups()).toBeGreaterThan(0);
      expect(badOf(third.events, "r-hurt")).toEqual([
        expect.objectContaining({ seq: 2, path: "runs/r-hurt/events/2.json", error: expect.objectContaining({ code: "object_missing", data: expect.objectContaining({ oid: lost }) }) }),
      ]);
      expect(armedRuns(third.events)).toEqual(["r-ok"]);
    } finally {
      await third.scheduler.stop();
    }
  });
  it.each([
    ["lost", (idx: string) => rm(idx)],
    ["truncated in place (its name kept)", (idx: string) => truncate(idx, 500)],
  ] as const)("a run whose last event is in the unreadable part of a damaged pack whose index was %s is reported at start, not fired after it", async (_how, damageIndex) => {
    const { d, hurt } = await indexedPacks();
    // One byte of the last event's entry flipped (the pack fails its checksum), its index lost
    // or torn, the pack older than a minute (as after a disk fault): it is indexed in memory from
    // the entries that read (design notes §79), without that blob. The object files' mark moves
    // either way (a name gone; a size changed), so the start looks the rows' objects up.
    const packDir = join(d.w.gitdir, "objects", "pack");
    const pack = join(packDir, (await readdir(packDir)).find((n) => n.endsWith(".pack")) as string);
    await flipInPack(pack, hurt.blobs[1] as string);
    await damageIndex(pack.replace(/\.pack$/, ".idx"));
    const old = new Date(Date.now() - 5 * 60_000);
    await utimes(pack, old, old);
    const store = await d.reopen();
    const { scheduler, events } = makeScheduler(store, d.clock);
    await scheduler.start();
    try {
      expect(badOf(events, "r-hurt")).toEqual([expect.objectContaining({ seq: 2, path: "runs/r-hurt/events/2.json" })]);
      expect(armedRuns(events)).not.toContain("r-hurt");
      // Its blob may also be the delta base of other runs' events (git deltifies similar
      // blobs): those are reported too. No run reported is armed.
      const reported = new Set(events.filter((e) => e.type === "bad_event").map((e) => (e as { runId: string }).runId));
      for (const run of armedRuns(events)) expect(reported.has(run)).toBe(false);
    } finally {
      await scheduler.stop();
    }
  });
});
