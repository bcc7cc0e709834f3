import { describe, expect, it } from "vitest";
import { isWorkflowHostError, type WorkflowHostError } from "../../../src/errors.js";
import { acquireHostLock, inspectHostLock, type HostLockOptions } from "../../../src/host/host-lock.js";
import type { Logger } from "../../../src/logger.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

const DATA = "/data";
const NOW = Date.parse("2026-05-01T10:00:00.000Z");

interface Recorded {
  readonly level: string;
  readonly message: string;
}

function recordingLogger(): Logger & { lines: Recorded[] } {
  const lines: Recorded[] = [];
  return {
    lines,
    info: (message) => lines.push({ level: "info", message }),
    warn: (message) => lines.push({ level: "warn", message }),
    error: (message) => lines.push({ level: "error", message }),
  };
}

/** Lock options for one simulated process on one simulated machine. */
function processOptions(fs: MemFs, pid: number, extra: Partial<HostLockOptions> = {}): HostLockOptions {
  return {
    dataDir: DATA,
    fs,
    pid,
    hostname: "box-1",
    clock: () => new Date(NOW),
    timers: createManualTimers(),
    isProcessAlive: () => true,
    ...extra,
  };
}

async function rejection(promise: Promise<unknown>): Promise<WorkflowHostError> {
  try {
    await promise;
  } catch (error) {
    if (isWorkflowHostError(error)) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

function holderFile(fs: MemFs): Record<string, unknown> {
  return JSON.parse(String(fs.readFileSync(`${DATA}/host.lock.json`, "utf8"))) as Record<string, unknown>;
}

/** Lets memfs callbacks and promise chains run (no time passes). */
async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Fires the manual timers `n` times, letting the work they start finish in between. */
async function driveTimers(timers: ReturnType<typeof createManualTimers>, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await settle();
    timers.fireAll();
  }
  await settle();
}

function settled<T>(promise: Promise<T>): { promise: Promise<T>; readonly done: boolean } {
  const state = { promise, done: false };
  promise.then(
    () => (state.done = true),
    () => (state.done = true),
  );
  return state;
}

describe("host lock", () => {
  it("takes a free lock and records pid, hostname, startedAt and heartbeatAt next to it", async () => {
    const fs = createMemFs();
    const lock = await acquireHostLock(processOptions(fs, 101));
    expect(fs.statSync(`${DATA}/host.lock`).isDirectory()).toBe(true);
    expect(holderFile(fs)).toMatchObject({ pid: 101, hostname: "box-1", startedAt: "2026-05-01T10:00:00.000Z", heartbeatAt: "2026-05-01T10:00:00.000Z" });
    expect(lock.tookOver).toBeNull();
    await lock.release();
    expect(fs.existsSync(`${DATA}/host.lock`)).toBe(false);
    expect(fs.existsSync(`${DATA}/host.lock.json`)).toBe(false);
  });

  it("refuses a second host while the holder is alive, naming pid, hostname and since when (D1)", async () => {
    const fs = createMemFs();
    const first = await acquireHostLock(processOptions(fs, 101));
    const error = await rejection(acquireHostLock(processOptions(fs, 202)));
    expect(error.code).toBe("host_locked");
    expect(error.data).toMatchObject({ pid: 101, hostname: "box-1", startedAt: "2026-05-01T10:00:00.000Z" });
    expect(error.message).toContain("pid 101");
    expect(holderFile(fs)["pid"]).toBe(101);
    await first.release();
  });

  it("lets exactly one of two concurrent acquirers win", async () => {
    const fs = createMemFs();
    const results = await Promise.allSettled([acquireHostLock(processOptions(fs, 101)), acquireHostLock(processOptions(fs, 202))]);
    const won = results.filter((r) => r.status === "fulfilled");
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0]?.reason as WorkflowHostError).code).toBe("host_locked");
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireHostLock>>>).value.release();
  });

  it("takes over the lock of a dead process on this machine and logs it (D3)", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101));
    // pid 101 is "killed": never released, its lock folder and holder file stay behind.
    const logger = recordingLogger();
    const lock = await acquireHostLock(processOptions(fs, 202, { logger, isProcessAlive: (pid) => pid !== 101 }));
    expect(lock.tookOver?.previous?.pid).toBe(101);
    expect(lock.tookOver?.reason).toContain("not running");
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("taking over") && l.message.includes("pid 101"))).toBe(true);
    expect(holderFile(fs)["pid"]).toBe(202);
    await lock.release();
  });

  it("takes over a lock whose old heartbeat stays unchanged for staleMs, even when the pid exists (pid reuse, a hung host)", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101));
    const old = new Date(NOW - 60_000);
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), heartbeatAt: old.toISOString() }));
    const logger = recordingLogger();
    const timers = createManualTimers();
    const acquiring = settled(acquireHostLock(processOptions(fs, 202, { logger, staleMs: 10_000, timers })));
    // Watched once a second (staleMs / 8, at most 1 000 ms): ten unchanged looks make it stale.
    await driveTimers(timers, 9);
    expect(acquiring.done).toBe(false);
    // Said once while it watches, before the takeover: who holds it and how long it waits.
    const waiting = logger.lines.filter((l) => l.message.startsWith("waiting for the host lock"));
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.message).toContain("pid 101 on box-1");
    expect(waiting[0]?.message).toContain("after 10 s");
    await driveTimers(timers, 1);
    const lock = await acquiring.promise;
    expect(lock.tookOver?.reason).toMatch(/did not change for 10000 ms/);
    expect(logger.lines.some((l) => l.message.includes("taking over"))).toBe(true);
    expect(logger.lines.filter((l) => l.message.startsWith("waiting for the host lock"))).toHaveLength(1);
    await lock.release();
  });

  it("does not judge a holder on another machine by pid: only its heartbeat counts", async () => {
    const fs = createMemFs();
    const first = await acquireHostLock(processOptions(fs, 101, { hostname: "box-2" }));
    const error = await rejection(acquireHostLock(processOptions(fs, 202, { isProcessAlive: () => false })));
    expect(error.code).toBe("host_locked");
    expect(error.data).toMatchObject({ pid: 101, hostname: "box-2" });
    await first.release();
  });

  it("treats a lock folder without a holder file by its age alone", async () => {
    const fs = createMemFs();
    fs.mkdirSync(`${DATA}/host.lock`, { recursive: true });
    const fresh = new Date(NOW - 1_000);
    fs.utimesSync(`${DATA}/host.lock`, fresh, fresh);
    const error = await rejection(acquireHostLock(processOptions(fs, 202)));
    expect(error.code).toBe("host_locked");
    expect(error.data["pid"]).toBeNull();
    const old = new Date(NOW - 20_000);
    fs.utimesSync(`${DATA}/host.lock`, old, old);
    const timers = createManualTimers();
    const acquiring = settled(acquireHostLock(processOptions(fs, 202, { timers })));
    await driveTimers(timers, 10);
    const lock = await acquiring.promise;
    expect(lock.tookOver).toMatchObject({ previous: null });
    await lock.release();
  });

  it("names a torn holder file as unreadable, with why, not as missing; the takeover is unchanged", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101));
    // A record cut short by a crash mid-write, as a torn rename-less copy would leave it.
    fs.writeFileSync(`${DATA}/host.lock.json`, '{\n  "pid": 101,\n  "hostn');
    const state = await inspectHostLock({ dataDir: DATA, fs });
    expect(state).toMatchObject({ locked: true, holder: null });
    expect(state.holderProblem).toMatch(/^not JSON \(.*; 24 bytes\)$/);
    const fresh = new Date(NOW - 1_000);
    fs.utimesSync(`${DATA}/host.lock`, fresh, fresh);
    const refused = await rejection(acquireHostLock(processOptions(fs, 202)));
    expect(refused.code).toBe("host_locked");
    expect(refused.data).toMatchObject({ pid: null, holderProblem: state.holderProblem });
    expect(refused.message).toContain("holder file unreadable: not JSON");
    const old = new Date(NOW - 20_000);
    fs.utimesSync(`${DATA}/host.lock`, old, old);
    const logger = recordingLogger();
    const timers = createManualTimers();
    const acquiring = settled(acquireHostLock(processOptions(fs, 202, { timers, logger })));
    await driveTimers(timers, 10);
    const lock = await acquiring.promise;
    expect(lock.tookOver).toMatchObject({ previous: null });
    const said = logger.lines.filter((l) => l.message.startsWith("waiting for the host lock") || l.message.startsWith("taking over"));
    expect(said).toHaveLength(2);
    for (const line of said) {
      expect(line.message).toContain("an unknown holder (holder file unreadable: not JSON (");
      expect(line.message).not.toContain("no holder file");
    }
    await lock.release();
  });

  it("names a holder file without the record's fields, and a lost lock whose holder file was garbled", async () => {
    const fs = createMemFs();
    fs.mkdirSync(`${DATA}/host.lock`, { recursive: true });
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ pid: "101", startedAt: "x" }));
    expect((await inspectHostLock({ dataDir: DATA, fs })).holderProblem).toBe("a JSON object without a numeric pid, a hostname");
    fs.rmdirSync(`${DATA}/host.lock`);
    fs.unlinkSync(`${DATA}/host.lock.json`);
    const timers = createManualTimers();
    const lost: string[] = [];
    const lock = await acquireHostLock(processOptions(fs, 101, { timers, onCompromised: (error) => lost.push(error.message) }));
    fs.writeFileSync(`${DATA}/host.lock.json`, "\u0000\u0000\u0000");
    await driveTimers(timers, 2);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatch(/the holder file is unreadable \(not JSON \(/);
    await lock.release();
  });

  it("refreshes heartbeatAt on every heartbeat", async () => {
    const fs = createMemFs();
    const timers = createManualTimers();
    let nowMs = NOW;
    const lock = await acquireHostLock(processOptions(fs, 101, { timers, clock: () => new Date(nowMs) }));
    nowMs += 5_000;
    expect(timers.pending).toBe(1);
    timers.fireAll();
    await expect.poll(() => holderFile(fs)["heartbeatAt"]).toBe("2026-05-01T10:00:05.000Z");
    expect((await inspectHostLock({ dataDir: DATA, fs })).holder?.pid).toBe(101);
    await lock.release();
    expect(timers.pending).toBe(0);
  });

  it("reports a lock taken over by someone else as compromised, once, and then leaves it alone", async () => {
    const fs = createMemFs();
    const timers = createManualTimers();
    const lost: WorkflowHostError[] = [];
    const lock = await acquireHostLock(processOptions(fs, 101, { timers, onCompromised: (e) => lost.push(e) }));
    // Another host took over: its holder record replaced ours.
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), pid: 303, token: "someone-else" }));
    timers.fireAll();
    await expect.poll(() => lost.length).toBe(1);
    expect(lost[0]?.code).toBe("host_locked");
    expect(lock.released).toBe(true);
    expect(timers.pending).toBe(0);
    await lock.release();
    // The other host's record survives our release.
    expect(holderFile(fs)["pid"]).toBe(303);
  });

  it("releases idempotently, and a released lock can be taken again", async () => {
    const fs = createMemFs();
    const lock = await acquireHostLock(processOptions(fs, 101));
    await lock.release();
    await lock.release();
    const again = await acquireHostLock(processOptions(fs, 202));
    expect(again.tookOver).toBeNull();
    await again.release();
    expect(await inspectHostLock({ dataDir: DATA, fs })).toMatchObject({ locked: false, holder: null });
  });
});

describe("host lock staleness across clock steps (issue 19, fault 6)", () => {
  it("takes over a lock whose heartbeat is stamped far in the future by a holder that is gone, within staleMs of watching", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101, { hostname: "box-2" }));
    // Crash, then the clock stepped back (or another machine's clock runs ahead): the record
    // claims a heartbeat in 2099, and nobody updates it any more.
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), heartbeatAt: "2099-01-01T00:00:00.000Z" }));
    const timers = createManualTimers();
    const logger = recordingLogger();
    const acquiring = settled(acquireHostLock(processOptions(fs, 202, { timers, logger, staleMs: 10_000 })));
    await driveTimers(timers, 9);
    expect(acquiring.done).toBe(false);
    await driveTimers(timers, 1);
    const lock = await acquiring.promise;
    expect(lock.tookOver?.previous?.pid).toBe(101);
    expect(lock.tookOver?.reason).toContain("in the future");
    expect(holderFile(fs)["pid"]).toBe(202);
    await lock.release();
  });

  it("takes over at once a future-stamped lock of a dead process on this machine", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101));
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), heartbeatAt: "2099-01-01T00:00:00.000Z" }));
    const lock = await acquireHostLock(processOptions(fs, 202, { isProcessAlive: (pid) => pid !== 101 }));
    expect(lock.tookOver?.reason).toContain("not running");
    await lock.release();
  });

  it("refuses a future-stamped lock whose holder keeps beating (a live host with a clock ahead)", async () => {
    const fs = createMemFs();
    const aheadTimers = createManualTimers();
    const ahead = await acquireHostLock(processOptions(fs, 101, { hostname: "box-2", clock: () => new Date("2099-01-01T00:00:00.000Z"), timers: aheadTimers }));
    const timers = createManualTimers();
    const acquiring = settled(acquireHostLock(processOptions(fs, 202, { timers, staleMs: 10_000 })));
    await driveTimers(timers, 3);
    expect(acquiring.done).toBe(false);
    aheadTimers.fireAll(); // the live holder beats
    await settle();
    await driveTimers(timers, 1);
    const error = await rejection(acquiring.promise);
    expect(error.code).toBe("host_locked");
    expect(error.data).toMatchObject({ pid: 101, hostname: "box-2" });
    expect(holderFile(fs)["pid"]).toBe(101);
    await ahead.release();
  });
});

describe("host lock on a failing disk (issue 19, faults 3 and 7)", () => {
  /** memfs whose writes fail with `errno` while `failing` is set. */
  function failingFs(errno: string): { fs: MemFs; failing: { on: boolean } } {
    const fs = createMemFs();
    const failing = { on: false };
    const fail = (): never => {
      throw Object.assign(new Error(`${errno}: injected`), { code: errno });
    };
    const promises = fs.promises as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const name of ["writeFile", "rename", "mkdir", "rmdir", "unlink"]) {
      const original = promises[name]?.bind(fs.promises) as (...args: unknown[]) => Promise<unknown>;
      promises[name] = async (...args: unknown[]) => (failing.on ? fail() : original(...args));
    }
    return { fs, failing };
  }

  it("keeps the lock through failing heartbeats (EROFS), naming the errno, fences commits meanwhile and resumes by itself", async () => {
    const { fs, failing } = failingFs("EROFS");
    const timers = createManualTimers();
    let monoMs = 0;
    const logger = recordingLogger();
    const lost: WorkflowHostError[] = [];
    const failures: WorkflowHostError[] = [];
    const lock = await acquireHostLock(
      processOptions(fs, 101, {
        timers,
        logger,
        staleMs: 10_000,
        monotonicNow: () => monoMs,
        onCompromised: (e) => lost.push(e),
        onHeartbeatFailed: (e) => failures.push(e),
      }),
    );
    expect(() => lock.assertHeld()).not.toThrow();
    failing.on = true;
    // 20 s of a read-only data dir, heartbeats retried every few hundred ms up to 5 s.
    for (let elapsed = 0; elapsed < 20_000; elapsed += 1_000) {
      monoMs += 1_000;
      await driveTimers(timers, 1);
    }
    expect(lost).toHaveLength(0);
    expect(lock.released).toBe(false);
    expect(failures.length).toBeGreaterThan(0);
    expect(failures[0]?.code).toBe("io_failed");
    expect(failures[0]?.data["errno"]).toBe("EROFS");
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("EROFS"))).toBe(true);
    // No commit while the heartbeat cannot be written: another host could be taking over.
    expect(() => lock.assertHeld()).toThrow(expect.objectContaining({ code: "host_locked" }));
    failing.on = false;
    monoMs += 5_000;
    await driveTimers(timers, 1);
    expect(() => lock.assertHeld()).not.toThrow();
    expect(lost).toHaveLength(0);
    expect(logger.lines.some((l) => l.message.includes("restored"))).toBe(true);
    await lock.release();
  });

  it("fences commits the moment the lock is lost, and when heartbeats are late", async () => {
    const fs = createMemFs();
    const timers = createManualTimers();
    let monoMs = 0;
    const lock = await acquireHostLock(processOptions(fs, 101, { timers, staleMs: 10_000, monotonicNow: () => monoMs }));
    monoMs += 7_000;
    expect(() => lock.assertHeld()).not.toThrow();
    // The event loop stalled: no heartbeat for 8 s, another host may be watching it go stale.
    monoMs += 1_000;
    expect(() => lock.assertHeld()).toThrow(expect.objectContaining({ code: "host_locked", data: expect.objectContaining({ state: "unconfirmed" }) }));
    await driveTimers(timers, 1);
    expect(() => lock.assertHeld()).not.toThrow();
    // Taken over by another host: fenced from the heartbeat that notices it.
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), pid: 303, token: "someone-else" }));
    await driveTimers(timers, 1);
    expect(() => lock.assertHeld()).toThrow(expect.objectContaining({ code: "host_locked", data: expect.objectContaining({ state: "compromised" }) }));
    await lock.release();
  });
});
