/**
 * The guard's 1 s limit counts from when the guard folder was made, not from when the lock call
 * came back: another host judges the guard stale by the folder's age, so a heartbeat that
 * stalled after its mkdir of `host.lock.guard` (SIGSTOP, a VM pause, a long collection, or an
 * event loop held by other work before the mkdir's callback ran) may find its guard removed and
 * another host inside a takeover. Such a heartbeat must not put its record back, nor pass the
 * commit fence afterwards.
 *
 * Two simulated processes share one memfs; the stalled host's guard mkdir is made, and its
 * callback held while the other host takes over.
 */
import { describe, expect, it } from "vitest";
import type { WorkflowHostError } from "../../../src/errors.js";
import { acquireHostLock, type HostLockOptions } from "../../../src/host/host-lock.js";
import { fenceState, type HeldCall, holdCall, holderToken, hookedMemFs, releaseHeld, simulatedHost, until } from "../../helpers/host-lock-sim.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import type { MemFs } from "../../helpers/memfs.js";

const DATA = "/data";
const NOW = Date.parse("2026-05-01T10:00:00.000Z");
const GUARD = `${DATA}/host.lock.guard`;

interface Gate {
  /** The next guard mkdir that succeeds has its callback held (once). */
  holdGuardMkdir: boolean;
  /** Writes whose path this matches wait. */
  holdsWrite: (path: string) => boolean;
  readonly waiting: HeldCall[];
}

/** A memfs whose writes matched by `gate.holdsWrite` wait, and whose next guard mkdir may be held. */
function gatedFs(gate: Gate): MemFs {
  const wait = (what: string): Promise<void> => holdCall(gate.waiting, what);
  return hookedMemFs({
    beforeWrite: (path) => (gate.holdsWrite(path) ? wait(`write ${path}`) : undefined),
    afterMkdir: (path, error) => {
      if (error !== null || path !== GUARD || !gate.holdGuardMkdir) return undefined;
      gate.holdGuardMkdir = false;
      return wait("guard mkdir");
    },
  });
}

function options(fs: MemFs, pid: number, extra: Partial<HostLockOptions>): HostLockOptions {
  return simulatedHost(fs, DATA, pid, NOW, extra);
}

describe("host lock heartbeat stalled inside the guard's taking", () => {
  it("a heartbeat that stalled after making the guard folder, while another host removed it as stale and took over, writes nothing and fails the fence", async () => {
    const gate: Gate = { holdGuardMkdir: false, holdsWrite: () => false, waiting: [] };
    const fs = gatedFs(gate);
    let monoMs = 0;
    const alive = new Set([101, 202]);
    const timersA = createManualTimers();
    const lost: WorkflowHostError[] = [];
    const a = await acquireHostLock(
      options(fs, 101, { timers: timersA, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid), onCompromised: (e) => lost.push(e) }),
    );
    const tokenA = a.holder.token;

    // A's heartbeat makes the guard folder; before its lock call comes back, A stalls.
    gate.holdGuardMkdir = true;
    monoMs += 5_000;
    timersA.fireAll();
    await until(() => gate.waiting.some((w) => w.what === "guard mkdir"));

    // Ten seconds with nothing of A running: A looks dead, and its guard folder was not
    // refreshed for longer than the guard's staleness, so the next host removes it and takes
    // the lock over; it is held right before its record is written.
    monoMs += 10_000;
    alive.delete(101);
    fs.rmSync(GUARD, { recursive: true, force: true });
    gate.holdsWrite = (path) => path.startsWith(`${DATA}/host.lock.json.`) && !path.includes(tokenA);
    const timersB = createManualTimers();
    const taking = acquireHostLock(options(fs, 202, { timers: timersB, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid) }));
    await until(() => gate.waiting.some((w) => w.what.startsWith("write ")));
    expect(holderToken(fs, DATA)).toBe(tokenA);

    // A runs again: its guard call returns, and its heartbeat goes on.
    releaseHeld(gate.waiting, (what) => what === "guard mkdir");
    await until(() => timersA.pending > 0 || lost.length > 0);

    // B's record goes in; B holds the lock.
    gate.holdsWrite = () => false;
    releaseHeld(gate.waiting, () => true);
    const b = await taking;
    expect(b.tookOver).not.toBeNull();
    expect(holderToken(fs, DATA)).toBe(b.holder.token);

    // A may not commit: its last heartbeat is the one of its acquire, 15 s ago.
    expect(fenceState(b)).toBe("held");
    expect(fenceState(a)).not.toBe("held");

    // A's next heartbeat finds the lock lost.
    timersA.fireAll();
    await until(() => lost.length > 0);
    expect(fenceState(a)).toBe("compromised");
    expect(holderToken(fs, DATA)).toBe(b.holder.token);
    await b.release();
    await a.release();
  });
});
