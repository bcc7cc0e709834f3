/**
 * An acquire that cannot write its holder record leaves nothing behind: no lock folder (which the
 * next host would refuse as a live lock of an unknown holder, then watch for `staleMs`) and no
 * record written beside the holder file. A folder where the holder file belongs is refused before
 * anything is written, naming it.
 */
import { describe, expect, it } from "vitest";
import type { WorkflowHostError } from "../../../src/errors.js";
import { acquireHostLock, type HostLockOptions } from "../../../src/host/host-lock.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

const DATA = "/data";
const NOW = Date.parse("2026-05-01T10:00:00.000Z");

function options(fs: MemFs, pid: number): HostLockOptions {
  return { dataDir: DATA, fs, pid, hostname: "box-1", clock: () => new Date(NOW), timers: createManualTimers(), isProcessAlive: () => true };
}

async function rejection(promise: Promise<unknown>): Promise<WorkflowHostError> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error as WorkflowHostError,
  );
}

function lockFiles(fs: MemFs): string[] {
  return (fs.readdirSync(DATA) as string[]).filter((name) => name.startsWith("host.lock")).sort();
}

describe("host lock acquire that cannot write its holder record", () => {
  it("refuses a folder at host.lock.json before writing anything, and the lock is free once it is gone", async () => {
    const fs = createMemFs();
    fs.mkdirSync(`${DATA}/host.lock.json`, { recursive: true });
    const error = await rejection(acquireHostLock(options(fs, 101)));
    expect(error).toMatchObject({ code: "io_failed", data: { path: `${DATA}/host.lock.json`, errno: "EISDIR" } });
    expect(error.message).toContain(`${DATA}/host.lock.json`);
    expect(lockFiles(fs)).toEqual(["host.lock.json"]);
    fs.rmdirSync(`${DATA}/host.lock.json`);
    const lock = await acquireHostLock(options(fs, 202));
    expect(lock.tookOver).toBeNull();
    await lock.release();
  });

  it("removes its lock folder and its record's file when the record cannot be put in place", async () => {
    const inner = createMemFs();
    let failRename = true;
    const promises = new Proxy(inner.promises, {
      get(target, prop) {
        if (prop === "rename") {
          return async (from: string, to: string) => {
            if (failRename && to === `${DATA}/host.lock.json`) throw Object.assign(new Error(`ENOSPC: no space left on device, rename '${from}' -> '${to}'`), { code: "ENOSPC", syscall: "rename", path: from });
            await target.rename(from, to);
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const fs = new Proxy(inner, {
      get(target, prop) {
        if (prop === "promises") return promises;
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const error = await rejection(acquireHostLock(options(fs, 101)));
    expect((error as unknown as NodeJS.ErrnoException).code).toBe("ENOSPC");
    expect(lockFiles(fs)).toEqual([]);
    // The next host takes the lock at once: it was never held.
    failRename = false;
    const lock = await acquireHostLock(options(fs, 202));
    expect(lock.tookOver).toBeNull();
    await lock.release();
  });
});

describe("host lock records left beside the holder file", () => {
  it("removes the records a killed host left half-placed when it takes the lock, and nothing else", async () => {
    const fs = createMemFs();
    fs.mkdirSync(DATA, { recursive: true });
    // A host killed mid-heartbeat leaves its next record beside the holder file.
    const left = [`${DATA}/host.lock.json.0b7c2f3e-1111-4c4c-8888-123456789abc.tmp`, `${DATA}/host.lock.json.9f00aa11-2222-4d4d-9999-abcdefabcdef.tmp`];
    for (const path of left) fs.writeFileSync(path, "{}");
    fs.writeFileSync(`${DATA}/host.lock.json.notes`, "not ours");
    const lock = await acquireHostLock(options(fs, 101));
    expect(lockFiles(fs)).toEqual(["host.lock", "host.lock.json", "host.lock.json.notes"]);
    await lock.release();
  });
});
