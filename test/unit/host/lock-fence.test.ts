/**
 * The host lock fences the ref move itself, not only the start of a commit: a host whose event
 * loop stalls after its commit passed the fence (its objects being written) and whose lock is
 * taken over meanwhile must not move the ref when it runs again. The check is made again right
 * before the ref's rename, after every awaited step of the commit.
 */
import { describe, expect, it } from "vitest";
import { acquireHostLock, type HostLockOptions } from "../../../src/host/host-lock.js";
import type { RepoStoreOptions } from "../../../src/substrate/types.js";
import { appendNext } from "../../helpers/append-merge.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { hookedMemFs } from "../../helpers/host-lock-sim.js";
import type { MemFs } from "../../helpers/memfs.js";
import { createMemStore, DATA_DIR, REPO } from "../../helpers/memfs-repo-store.js";

const NOW = Date.parse("2026-05-01T10:00:00.000Z");

/** Holds renames into `objects/` (a commit's objects put in place) while closed. */
interface ObjectGate {
  closed: boolean;
  readonly waiting: (() => void)[];
}

/** A memfs whose renames into `<gitdir>/objects/` wait while `gate` is closed. */
function gatedFs(gate: ObjectGate): MemFs {
  return hookedMemFs({
    beforeRename: (_from, to) =>
      gate.closed && to.includes("/objects/") ? new Promise<void>((resolve) => gate.waiting.push(resolve)) : undefined,
  });
}

/** Lets memfs callbacks and promise chains run until `done()` (no time passes). */
async function settleUntil(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(done()).toBe(true);
}

function lockOptions(fs: MemFs, pid: number, extra: Partial<HostLockOptions>): HostLockOptions {
  return { dataDir: DATA_DIR, fs, pid, hostname: "box-1", clock: () => new Date(NOW), timers: createManualTimers(), staleMs: 10_000, ...extra };
}

describe("host lock fence on the ref move", () => {
  it("a commit that passed the fence, then stalled while another host took the lock over, does not move the ref", async () => {
    const gate: ObjectGate = { closed: false, waiting: [] };
    const fs = gatedFs(gate);
    let monoMs = 0;
    const alive = new Set([101]);
    const lock = await acquireHostLock(lockOptions(fs, 101, { monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid) }));
    const { store } = createMemStore({ fs, fence: () => lock.assertHeld() } satisfies Partial<RepoStoreOptions>);
    await store.initRepo(null, REPO);
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    const tip = await store.resolveRef(null, REPO, "main");

    // The next commit gets past the start of its ref update and pauses while its objects go in.
    gate.closed = true;
    const write = store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    const outcome = write.then(
      () => null,
      (error: unknown) => error,
    );
    await settleUntil(() => gate.waiting.length > 0);

    // Meanwhile the host stalls past its heartbeat's limit and another process takes the lock
    // (the old holder looks dead to it: taken over at once).
    monoMs += 10_000;
    alive.delete(101);
    const taker = await acquireHostLock(lockOptions(fs, 202, { isProcessAlive: (pid) => pid === 202 }));
    expect(taker.tookOver).not.toBeNull();

    // The stalled host runs again: its commit must not reach the ref.
    gate.closed = false;
    for (const resume of gate.waiting.splice(0)) resume();
    expect(await outcome).toMatchObject({ code: "host_locked" });
    expect(await store.resolveRef(null, REPO, "main")).toBe(tip);
    // The ref is free again: the new holder's commits are not blocked by a left-over lock.
    expect(fs.existsSync(`${DATA_DIR}/deployments/${REPO.id}.git/refs/heads/main.lock`)).toBe(false);
    await taker.release();
    await lock.release();
  });
});
