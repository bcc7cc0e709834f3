/**
 * A host that loses its lock while it is busy commits nothing more (issue 19, fault 3): the
 * host's event loop stalls (as a long synchronous planning once did), another process takes the
 * stale lock over, and when the stalled host runs again its due timers must not reach the ref.
 *
 * What the fence promises: a ref rename is issued only right after the lock was seen held with
 * a heartbeat younger than ¾ of `staleMs` (the check is synchronous and the rename follows it
 * with no await between), and that check runs after every other step of the commit; so a commit
 * the stall caught anywhere in flight (pack or loose objects going in, the lock file's bytes,
 * a flush) re-checks after the stall and is refused. Only a rename already handed to the OS
 * when the stall began is unfenced; the stall here is of this thread alone, the OS finishes that
 * rename within the quarter of `staleMs` left before anyone may take over, so the tip the taker
 * reads once it holds the lock is final. (A deterministic form: test/unit/host/lock-fence.test.ts.)
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it, afterEach } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
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

/**
 * `op` retried while the host's lock is unconfirmed: with a 2 s stale limit a loaded machine can
 * delay a heartbeat past the 1.5 s a write accepts, and the write is refused until the next one.
 */
async function whileUnconfirmed<T>(op: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await op();
    } catch (error) {
      if (!isWorkflowHostError(error, "host_locked")) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe("host lock fence", () => {
  it("commits nothing more once another process took the lock over while the host was stalled mid-flight", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    let firstFire: () => void = () => undefined;
    const fired = new Promise<void>((resolve) => (firstFire = resolve));
    const host = createWorkflowHost({ dataDir, lock: { staleMs: 2_000 }, watch: { pollMs: 100, chokidar: true }, onEvent: (e) => e.type === "fired" && firstFire() });
    await host.start();
    try {
      await whileUnconfirmed(() => host.createDeployment("dep"));
      // A tick every second, each missed one fired (misfire all): however long the set-up and the
      // stall take on this machine, the host is about to commit when it runs again.
      await whileUnconfirmed(() => host.runtime("dep").setTimer("busy", { timerId: "tick", cron: "* * * * * *", misfire: "all" }));
      await fired;

      const taker = spawnTs(TAKE_LOCK, [dataDir, gitdir, "2000"]);
      const marker = join(dirname(dataDir), "taken.json");
      stallUntil(() => existsSync(marker), 30_000);
      expect(existsSync(marker)).toBe(true);
      const taken = JSON.parse(readFileSync(marker, "utf8")) as { tip: string; reason: string | null };
      expect(taken.reason).toMatch(/did not change/);

      // Running again: due ticks galore, and a lock that is no longer ours: the host stops.
      await host.stopped;
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
