/**
 * The host lock's files in the data dir root, each replaced by a link to something outside the
 * data dir: taking the lock is refused with path_escapes_data_dir at once, having read nothing
 * through the link and written nothing outside.
 */
import { execFileSync } from "node:child_process";
import { mkdir, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { acquireHostLock, HOST_LOCK_HOLDER_NAME, HOST_LOCK_NAME, inspectHostLock } from "../../../src/host/host-lock.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { dirSnapshot } from "../../helpers/dir-snapshot.js";
import { settledCode } from "../../helpers/expect-code.js";

const tempDir = useTempDirs("wh-lock-links-");

const snapshot = (dir: string): Promise<string[]> => dirSnapshot(dir, { contents: true });

const outcome = (work: () => Promise<unknown>): Promise<string> => settledCode(work, "held");

describe("host lock files that are links leading outside the data dir", () => {
  it("a holder file linked to an outside file holding a live-looking record: refused, not read, not written", async () => {
    const dataDir = await tempDir();
    const outside = await tempDir();
    const target = join(outside, "holder.json");
    // A record naming this very process: read through the link, it would stand for a live holder.
    const now = new Date().toISOString();
    await writeFile(target, JSON.stringify({ pid: process.pid, hostname: "elsewhere", startedAt: now, heartbeatAt: now, token: "x", beat: 1 }));
    await mkdir(join(dataDir, HOST_LOCK_NAME));
    await utimes(join(dataDir, HOST_LOCK_NAME), new Date(0), new Date(0));
    await symlink(target, join(dataDir, HOST_LOCK_HOLDER_NAME));
    const before = await snapshot(outside);
    expect(await outcome(() => acquireHostLock({ dataDir, staleMs: 2_000, isProcessAlive: (pid) => pid === process.pid }))).toBe("path_escapes_data_dir");
    expect(await snapshot(outside)).toEqual(before);
  });

  it("the lock folder linked to an outside folder: refused, nothing removed or written outside", async () => {
    const dataDir = await tempDir();
    const outside = await tempDir();
    await mkdir(join(outside, "lock"));
    await utimes(join(outside, "lock"), new Date(0), new Date(0));
    await symlink(join(outside, "lock"), join(dataDir, HOST_LOCK_NAME));
    const before = await snapshot(outside);
    expect(await outcome(() => acquireHostLock({ dataDir, staleMs: 2_000 }))).toBe("path_escapes_data_dir");
    expect(await snapshot(outside)).toEqual(before);
  });

  it("names what stands at the holder file's path when it is no file (a FIFO is never opened)", async () => {
    const dataDir = await tempDir();
    await mkdir(join(dataDir, HOST_LOCK_NAME));
    execFileSync("mkfifo", [join(dataDir, HOST_LOCK_HOLDER_NAME)]);
    expect((await inspectHostLock({ dataDir })).holderProblem).toBe("a FIFO (named pipe), not a regular file");
  });

  it("refuses a file at the lock folder's path at once, naming it, instead of watching it as a live lock and failing on its removal", async () => {
    const dataDir = await tempDir();
    await writeFile(join(dataDir, HOST_LOCK_NAME), "not a lock\n");
    await utimes(join(dataDir, HOST_LOCK_NAME), new Date(0), new Date(0));
    const logged: string[] = [];
    const logger = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(m), error: (m: string) => logged.push(m) };
    const error = await acquireHostLock({ dataDir, staleMs: 1_000, logger }).then(
      (lock) => lock.release().then(() => null),
      (e: unknown) => e as { code?: string; message?: string },
    );
    expect(error).toMatchObject({ code: "io_failed", message: expect.stringContaining(`${join(dataDir, HOST_LOCK_NAME)} is a file, not the folder a host makes there`) });
    expect(logged.filter((m) => m.includes("taking over"))).toEqual([]);
    expect(await snapshot(dataDir)).toEqual([`${HOST_LOCK_NAME} 11 0 not a lock\n`]);
  });
});

