/**
 * A host that loses its lock while it is busy commits nothing more (issue 19, fault 3): the
 * host's event loop stalls (as a long synchronous planning once did), another process takes the
 * stale lock over, and when the stalled host runs again its due timers must not reach the ref.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it, afterEach } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { pollFor } from "../reliability/serve-process.js";
import { killAllChildren, spawnTs } from "./cli-child.js";

const tempDir = useTempDirs("wfh-fence-");
const TAKE_LOCK = join(dirname(new URL(import.meta.url).pathname), "fixtures", "take-lock.ts");

afterEach(() => {
  killAllChildren();
});

/** Blocks this process's event loop (a stalled host) until `done()` or `maxMs`. */
function stallUntil(done: () => boolean, maxMs: number): void {
  const nap = new Int32Array(new SharedArrayBuffer(4));
  const endMs = performance.now() + maxMs;
  while (!done() && performance.now() < endMs) Atomics.wait(nap, 0, 0, 50);
}

function tipOf(gitdir: string): string {
  return execFileSync("git", [`--git-dir=${gitdir}`, "rev-parse", "refs/heads/main"], { encoding: "utf8" }).trim();
}

describe("host lock fence", () => {
  it("commits nothing more once another process took the lock over while the host was stalled mid-flight", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    const events: SchedulerEvent[] = [];
    const host = createWorkflowHost({ dataDir, lock: { staleMs: 2_000 }, watch: { pollMs: 100, chokidar: true }, onEvent: (e) => events.push(e) });
    await host.start();
    try {
      await host.createDeployment("dep");
      const runtime = host.runtime("dep");
      // Timers due every 100 ms for the next 15 s: the host is always about to commit.
      const startMs = Date.now();
      for (let i = 0; i < 150; i++) await runtime.setTimer("busy", { timerId: `t${i}`, fireAt: new Date(startMs + 300 + i * 100).toISOString() });
      await pollFor(() => (events.some((e) => e.type === "fired") ? true : undefined), 10_000, 20, "a first fire");

      const taker = spawnTs(TAKE_LOCK, [dataDir, gitdir, "2000"]);
      const marker = join(dirname(dataDir), "taken.json");
      stallUntil(() => existsSync(marker), 30_000);
      expect(existsSync(marker)).toBe(true);
      const taken = JSON.parse(readFileSync(marker, "utf8")) as { tip: string; reason: string | null };
      expect(taken.reason).toMatch(/did not change/);

      // Running again: due timers galore, and a lock that is no longer ours.
      await Promise.race([host.stopped, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      expect(host.state).toBe("stopped");
      expect(tipOf(gitdir)).toBe(taken.tip);
      expect(JSON.parse(readFileSync(join(dataDir, "host.lock.json"), "utf8"))).toMatchObject({ pid: taker.pid });
      taker.kill("SIGTERM");
      expect((await taker.exited).code).toBe(0);
    } finally {
      await host.stop();
    }
  });
});
