/**
 * The host lock on a loaded machine: file system calls that are slow, or one that never returns.
 * - A guard operation whose fs call hangs is given up at its time limit: the heartbeat fails, is
 *   retried, and the next one lands; the hung call settling late changes nothing (no holder
 *   write, and the guard a later heartbeat holds is not removed).
 * - With every call taking 400 ms, heartbeats land: the guard is refreshed while held, and the
 *   holder write's window counts from the last refresh seen done, not only from the mkdir.
 * - The window still closes when the guard is not refreshed in time: a refresh seen done later
 *   than 1 s after the last confirmed one does not count, and a heartbeat whose guard went
 *   unrefreshed past the limit writes nothing.
 *
 * Time is a fake monotonic clock moved by the slow fs (`test/helpers/slow-fs.ts`); the lock's
 * and the guard's timers are manual; the guard's wall clock is a test value.
 */
import { describe, expect, it } from "vitest";
import type { WorkflowHostError } from "../../../src/errors.js";
import { acquireHostLock, type HostLock, type HostLockOptions } from "../../../src/host/host-lock.js";
import { fenceState, until } from "../../helpers/host-lock-sim.js";
import { createManualTimers, type ManualTimers } from "../../helpers/manual-timers.js";
import { createSlowFs, type SlowFs } from "../../helpers/slow-fs.js";

const DATA = "/data";
const NOW = Date.parse("2026-05-01T10:00:00.000Z");
const HOLDER = `${DATA}/host.lock.json`;
const GUARD = `${DATA}/host.lock.guard`;

interface Rig {
  readonly slow: SlowFs;
  readonly timers: ManualTimers;
  readonly guardTimers: ManualTimers;
  readonly failures: WorkflowHostError[];
  /** The guard's wall clock (ms). */
  guardWallMs: number;
  lock: HostLock;
}

async function rig(extra: Partial<HostLockOptions> = {}): Promise<Rig> {
  const slow = createSlowFs();
  const timers = createManualTimers();
  const guardTimers = createManualTimers();
  const failures: WorkflowHostError[] = [];
  const r = { slow, timers, guardTimers, failures, guardWallMs: NOW } as Rig;
  r.lock = await acquireHostLock({
    dataDir: DATA,
    fs: slow.fs,
    pid: 101,
    hostname: "box-1",
    clock: () => new Date(NOW),
    staleMs: 10_000,
    timers,
    monotonicNow: () => slow.now,
    isProcessAlive: () => true,
    onHeartbeatFailed: (error) => failures.push(error),
    guard: { timers: guardTimers, clock: () => new Date(r.guardWallMs) },
    ...extra,
  });
  return r;
}

/** The `beat` of the holder file on disk. */
function beatOnDisk(r: Rig): unknown {
  return (JSON.parse(String(r.slow.inner.readFileSync(HOLDER, "utf8"))) as { beat?: unknown }).beat;
}

function causeState(error: WorkflowHostError | undefined): unknown {
  return (error?.cause as WorkflowHostError | undefined)?.data?.["state"];
}

describe("host lock heartbeat on a slow or hanging file system", () => {
  it("gives up a guard operation whose fs call never returns; later heartbeats land and the late settle writes nothing", async () => {
    const r = await rig();
    const { slow } = r;

    // The heartbeat's read of the holder file, under the guard, never returns.
    let hangs = 1;
    slow.delayOf = (name, path) => (name === "readFile" && path === HOLDER && hangs-- > 0 ? "hang" : 0);
    slow.now += 5_000;
    r.timers.fireAll();
    await until(() => slow.hung.length > 0);
    expect(r.timers.pending).toBe(0);

    // Its time limit passes: the heartbeat fails (typed), a retry is armed.
    r.guardTimers.fireAll();
    await until(() => r.timers.pending > 0);
    expect(r.failures).toHaveLength(1);
    expect(r.failures[0]).toMatchObject({ code: "io_failed", data: { errno: "ETIMEDOUT" } });

    // The retry: the given-up guard folder was left to go stale (nothing refreshes it); once it
    // is, the next heartbeat removes it and lands. Its own read waits at a gate.
    r.guardWallMs += 3_000;
    slow.now += 1_000;
    let openGate: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let gatedReads = 0;
    slow.delayOf = (name, path) => {
      if (name !== "readFile" || path !== HOLDER) return 0;
      gatedReads += 1;
      return gate;
    };
    r.timers.fireAll();
    await until(() => gatedReads > 0);
    expect(slow.inner.existsSync(GUARD)).toBe(true);

    // The hung read of the given-up heartbeat returns now, inside the new heartbeat's guard: it
    // neither writes its record nor removes the guard.
    slow.hung.splice(0)[0]!.resume();
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(slow.inner.existsSync(GUARD)).toBe(true);
    expect(beatOnDisk(r)).toBe(0);

    openGate();
    await until(() => r.timers.pending > 0);
    expect(r.failures).toHaveLength(1);
    expect(beatOnDisk(r)).toBe(1);
    expect(fenceState(r.lock)).toBe("held");
    expect(slow.inner.existsSync(GUARD)).toBe(false);

    // And the one after it as well.
    slow.delayOf = () => 0;
    slow.now += 5_000;
    r.timers.fireAll();
    await until(() => r.timers.pending > 0);
    expect(beatOnDisk(r)).toBe(2);
    expect(r.failures).toHaveLength(1);
    await r.lock.release();
    expect(slow.inner.existsSync(`${DATA}/host.lock`)).toBe(false);
  });

  it("heartbeats land when every fs call takes 400 ms", async () => {
    const r = await rig();
    const { slow } = r;
    slow.delayOf = () => 400;
    for (let round = 1; round <= 3; round++) {
      slow.now += 5_000;
      r.timers.fireAll();
      await slow.drive(() => r.timers.pending > 0);
      expect(r.failures.map(causeState)).toEqual([]);
      expect(beatOnDisk(r)).toBe(round);
      expect(fenceState(r.lock)).toBe("held");
    }
    slow.delayOf = () => 0;
    await r.lock.release();
  });

  it("a refresh of the guard seen done more than 1 s after the last confirmed one does not count: the heartbeat writes nothing", async () => {
    const r = await rig();
    const { slow } = r;
    // Times from the heartbeat's start: the guard's mkdir is issued at 0 and done at 300; its
    // first refresh is issued at 300 and seen done at 1 200, late: more than 1 s after the mkdir,
    // by when another host may have judged the guard stale on the mkdir's mtime. The holder file
    // is read (lstat from 300 to 700, readFile to 1 250) within 1 s of that refresh's issue. The
    // refresh does not count, so the write's window ended at 1 000.
    const delays: Record<string, number> = { [`mkdir ${GUARD}`]: 300, [`utimes ${GUARD}`]: 900, [`lstat ${HOLDER}`]: 400, [`readFile ${HOLDER}`]: 550 };
    slow.delayOf = (name, path) => delays[`${name} ${path}`] ?? 0;
    slow.now += 5_000;
    r.timers.fireAll();
    await slow.drive(() => r.timers.pending > 0);
    expect(r.failures).toHaveLength(1);
    expect(causeState(r.failures[0])).toBe("guard_expired");
    expect(beatOnDisk(r)).toBe(0);
    // The guard, possibly another host's by now, is left alone.
    expect(slow.inner.existsSync(GUARD)).toBe(true);
  });

  it("a heartbeat whose guard was not refreshed past the limit (its mtime settings never return) writes nothing", async () => {
    const r = await rig();
    const { slow } = r;
    // No refresh ever lands; the holder read returns 2.5 s after the guard was made, past the
    // 2 s after which another host would judge the guard stale and take it.
    slow.delayOf = (name, path) => (name === "utimes" ? "hang" : name === "readFile" && path === HOLDER ? 2_500 : 0);
    slow.now += 5_000;
    r.timers.fireAll();
    await slow.drive(() => r.timers.pending > 0);
    expect(r.failures).toHaveLength(1);
    expect(causeState(r.failures[0])).toBe("guard_expired");
    expect(beatOnDisk(r)).toBe(0);
    expect(slow.inner.readdirSync(DATA).filter((name) => String(name).endsWith(".tmp"))).toEqual([]);
  });
});
