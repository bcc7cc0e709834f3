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

  it("takes over a lock whose heartbeat is older than staleMs, even when the pid exists (pid reuse, a hung host)", async () => {
    const fs = createMemFs();
    await acquireHostLock(processOptions(fs, 101));
    const old = new Date(NOW - 60_000);
    fs.utimesSync(`${DATA}/host.lock`, old, old);
    fs.writeFileSync(`${DATA}/host.lock.json`, JSON.stringify({ ...holderFile(fs), heartbeatAt: old.toISOString() }));
    const logger = recordingLogger();
    const lock = await acquireHostLock(processOptions(fs, 202, { logger, staleMs: 10_000 }));
    expect(lock.tookOver?.reason).toMatch(/heartbeat is \d+ ms old/);
    expect(logger.lines.some((l) => l.message.includes("taking over"))).toBe(true);
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
    const lock = await acquireHostLock(processOptions(fs, 202));
    expect(lock.tookOver).toMatchObject({ previous: null });
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
