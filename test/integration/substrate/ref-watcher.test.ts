/**
 * The ref watcher on real disk with chokidar: every ref another process moves into place wakes
 * the listeners, also a ref in a folder made a moment before (as after `git pack-refs` removed
 * the emptied folder), without any poll.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { createRefWatcher } from "../../../src/substrate/ref-watcher.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-ref-watcher-");
const script = fileURLToPath(new URL("./fixtures/ref-in-new-folder.mjs", import.meta.url));
const run = promisify(execFile);
const timers = { setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms), clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout) };

describe("ref watcher", () => {
  it("wakes its listeners for a ref written into a folder made a moment before, by another process", async () => {
    const gitdir = join(await tempDir(), "repo.git");
    mkdirSync(join(gitdir, "refs", "heads"), { recursive: true });
    const watcher = createRefWatcher({ gitdir, pollMs: null, useChokidar: true, timers });
    const waiting = new Map<string, () => void>();
    // A listener does what a subscriber does: looks at the refs again.
    watcher.listen(() => {
      for (const [folder, seen] of waiting) if (existsSync(join(gitdir, "refs", "heads", folder, "x"))) seen();
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late: string[] = [];
    try {
      for (let round = 0; round < 16; round++) {
        const folder = `n${round}`;
        const seen = new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), 1_500);
          waiting.set(folder, () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
        await run(process.execPath, [script, gitdir, folder, String(round % 4)]);
        if (!(await seen)) late.push(`${folder} (${round % 4} ms after its folder)`);
        waiting.delete(folder);
      }
    } finally {
      await watcher.close();
    }
    expect(late).toEqual([]);
  }, 60_000);
});
