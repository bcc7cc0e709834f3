/**
 * The heartbeat never writes through a takeover: a host whose heartbeat read its own holder
 * record and then stalled (SIGSTOP, a VM pause, a long collection) while another host took the
 * lock over must not put its record back over the new holder's, nor pass the commit fence
 * afterwards. It finds the lock lost, stops and reports it (`onCompromised`).
 *
 * Two simulated processes share one memfs; the stalled host's writes of its holder record wait
 * at a gate while the other one takes the lock over.
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

/** What the gated fs holds back and what it saw. */
interface Gate {
  /** File writes whose path this matches wait until {@link openGate} lets them go. */
  holds: (path: string) => boolean;
  /** Reads whose path this matches are made, then wait with what they read (once each). */
  holdsAfterRead: (path: string) => boolean;
  readonly waiting: HeldCall[];
  /** Times an mkdir of the guard folder found it already there (another host inside the guard). */
  guardBusy: number;
}

/** A memfs whose writes matched by `gate.holds` wait, one read may wait, and busy guards are counted. */
function gatedFs(gate: Gate): MemFs {
  const wait = (path: string): Promise<void> => holdCall(gate.waiting, path);
  return hookedMemFs({
    beforeWrite: (path) => (gate.holds(path) ? wait(path) : undefined),
    afterRead: (path) => {
      if (!gate.holdsAfterRead(path)) return undefined;
      gate.holdsAfterRead = () => false;
      return wait(path);
    },
    afterMkdir: (path, error) => {
      if (error?.code === "EEXIST" && path === GUARD) gate.guardBusy += 1;
    },
  });
}

function options(fs: MemFs, pid: number, extra: Partial<HostLockOptions>): HostLockOptions {
  return simulatedHost(fs, DATA, pid, NOW, extra);
}

describe("host lock heartbeat against a takeover", () => {
  it("a heartbeat that read its own record and stalled while another host took over does not write it back, fails the fence and reports the loss", async () => {
    const gate: Gate = { holds: () => false, holdsAfterRead: () => false, waiting: [], guardBusy: 0 };
    const fs = gatedFs(gate);
    let monoMs = 0;
    const alive = new Set([101, 202]);
    const timersA = createManualTimers();
    const lost: WorkflowHostError[] = [];
    const a = await acquireHostLock(
      options(fs, 101, { timers: timersA, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid), onCompromised: (e) => lost.push(e) }),
    );
    const tokenA = a.holder.token;

    // A's heartbeat is due: it reads its own record, and right after that read it stalls.
    gate.holdsAfterRead = (path) => path === `${DATA}/host.lock.json`;
    monoMs += 5_000;
    timersA.fireAll();
    await until(() => gate.waiting.length > 0);

    // Ten seconds pass with nothing of A running: A looks dead, and a guard it held has not been
    // refreshed for longer than the guard's staleness (2 s), so the next host removes it.
    monoMs += 10_000;
    alive.delete(101);
    fs.rmSync(GUARD, { recursive: true, force: true });
    const timersB = createManualTimers();
    const b = await acquireHostLock(options(fs, 202, { timers: timersB, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid) }));
    expect(b.tookOver).not.toBeNull();
    expect(holderToken(fs, DATA)).toBe(b.holder.token);

    // A runs again and finishes its heartbeat.
    releaseHeld(gate.waiting, () => true);
    await until(() => timersA.pending > 0 || lost.length > 0);

    // The new holder's record stands, and A may not commit.
    expect(holderToken(fs, DATA)).toBe(b.holder.token);
    expect(fenceState(a)).not.toBe("held");
    expect(fenceState(b)).toBe("held");

    // A's next heartbeat finds the lock lost: reported once, nothing more written.
    timersA.fireAll();
    await until(() => lost.length > 0);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ code: "host_locked" });
    expect(fenceState(a)).toBe("compromised");
    expect(timersA.pending).toBe(0);
    expect(holderToken(fs, DATA)).toBe(b.holder.token);
    // B's own heartbeat still finds its record.
    timersB.fireAll();
    await until(() => timersB.pending > 0);
    expect(fenceState(b)).toBe("held");
    expect(holderToken(fs, DATA)).toBe(b.holder.token);
    await b.release();
    await a.release();
  });

  it("a heartbeat due while another host is inside its takeover waits for it, then finds the lock lost instead of overwriting the new record", async () => {
    const gate: Gate = { holds: () => false, holdsAfterRead: () => false, waiting: [], guardBusy: 0 };
    const fs = gatedFs(gate);
    let monoMs = 0;
    const alive = new Set([101, 202]);
    const timersA = createManualTimers();
    const lost: WorkflowHostError[] = [];
    const a = await acquireHostLock(
      options(fs, 101, { timers: timersA, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid), onCompromised: (e) => lost.push(e) }),
    );
    const tokenA = a.holder.token;

    // A stalls past its heartbeat; B, seeing A as dead, takes over and is held right before
    // its own record is written (the old one is still A's).
    monoMs += 10_000;
    alive.delete(101);
    gate.holds = (path) => path.includes("host.lock.json.") && !path.includes(tokenA);
    const timersB = createManualTimers();
    const taking = acquireHostLock(options(fs, 202, { timers: timersB, monotonicNow: () => monoMs, isProcessAlive: (pid) => alive.has(pid) }));
    await until(() => gate.waiting.length > 0);
    expect(holderToken(fs, DATA)).toBe(tokenA);

    // A wakes inside B's takeover: its overdue heartbeat fires. Its write, if it gets that far, is
    // held until B's record is in place.
    gate.holds = (path) => path.includes("host.lock.json.");
    timersA.fireAll();
    await until(() => gate.waiting.some((w) => w.what.includes(tokenA)) || gate.guardBusy > 0);

    releaseHeld(gate.waiting, (path) => !path.includes(tokenA));
    const b = await taking;
    expect(b.tookOver).not.toBeNull();
    releaseHeld(gate.waiting, () => true);
    gate.holds = () => false;
    await until(() => timersA.pending > 0 || lost.length > 0);

    expect(holderToken(fs, DATA)).toBe(b.holder.token);
    expect(fenceState(a)).not.toBe("held");
    expect(fenceState(b)).toBe("held");
    expect(lost).toHaveLength(1);
    expect(fenceState(a)).toBe("compromised");
    timersB.fireAll();
    await until(() => timersB.pending > 0);
    expect(fenceState(b)).toBe("held");
    await b.release();
    await a.release();
  });
});
