/**
 * A burst: every timer of a deployment due at one instant (ties), so the queue is emptied in one
 * step (a whole-queue drain, see timer-queue.ts), while cancels, replacements and run ends race
 * the fire commits, from the host and from another process. From the log alone: every TimerFired
 * belongs to the generation armed at that point, each generation fires at most once, and at the
 * end nothing armed is due.
 */
import { describe, expect, it } from "vitest";
import { createFakeClock, createMemoryRepoStore } from "../../../src/testing/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { type RunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { isoFromMs } from "../../../src/workflow/time.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { armedByLog, makeScheduler, readRepoLogs, waitForCaughtUp } from "../../helpers/fixture-scheduler.js";
import { seededRandom } from "../../helpers/seeded-random.js";

const REPO = "burst";
const RUNS = 30;
const TIMERS = ["t0", "t1", "t2"];
const START = "2026-05-01T10:00:00.000Z";
const TURN_TIMERS = {
  setTimeout: (callback: () => void): unknown => setImmediate(callback),
  clearTimeout: (handle: unknown): void => clearImmediate(handle as NodeJS.Immediate),
};
const STORE_OPTIONS = { timers: TURN_TIMERS, lockTimeoutMs: 600_000 };
const runId = (i: number): string => `r${String(i).padStart(2, "0")}`;

async function append(store: RepoStore, run: string, body: (log: RunLog) => Record<string, unknown>[]): Promise<void> {
  await appendRunEvents({
    store,
    principal: null,
    repoId: REPO,
    runId: run,
    message: `test append to ${run}`,
    decide: (log) => ({ append: log.state.terminal === null ? body(log) : [], result: undefined }),
  });
}

/** Log-only check: fires only of the armed generation, at most one per generation, nothing after an end. */
function checkLogs(logs: ReadonlyMap<string, RunLog>): string[] {
  const problems: string[] = [];
  for (const [run, log] of logs) {
    const open = new Map<string, { seq: number; fired: number }>();
    let ended = false;
    for (const e of log.events) {
      if (ended) problems.push(`${run} seq ${e.seq}: ${e.type} after the run ended`);
      const timerId = (e as { data?: { timerId?: string } }).data?.timerId;
      if (e.type === "TimerSet" && timerId !== undefined) open.set(timerId, { seq: e.seq, fired: 0 });
      else if (e.type === "TimerCancelled" && timerId !== undefined) open.delete(timerId);
      else if (e.type === "TimerFired" && timerId !== undefined) {
        const g = open.get(timerId);
        if (g === undefined) problems.push(`${run} seq ${e.seq}: TimerFired of ${timerId} with no armed generation`);
        else if (++g.fired > 1) problems.push(`${run} seq ${e.seq}: second TimerFired of ${timerId}'s generation set at seq ${g.seq}`);
        open.delete(timerId);
      } else if (e.type === "RunCompleted" || e.type === "RunFailed" || e.type === "RunCancelled") ended = true;
    }
  }
  return problems;
}

describe("a burst of timers due at one instant, raced by cancels, replacements and run ends", () => {
  for (let seed = 1; seed <= 6; seed++) {
    it(`fires each armed generation exactly once (seed ${seed})`, async () => {
      const random = seededRandom(seed);
      const clock = createFakeClock(START);
      const { store, fs } = createMemoryRepoStore({ clock: clock.clock, ...STORE_OPTIONS });
      const other = createMemoryRepoStore({ fs, clock: clock.clock, ...STORE_OPTIONS }).store;
      await store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: REPO });
      const run = makeScheduler(store, clock);
      try {
        await run.scheduler.start();
        const dueMs = clock.now() + 60_000;
        for (let i = 0; i < RUNS; i++) {
          // Ties: every timer at one instant, so the wake finds the whole queue due.
          await append(store, runId(i), () => TIMERS.map((timerId) => ({ type: "TimerSet", at: isoFromMs(clock.now()), data: { timerId, fireAt: isoFromMs(dueMs) } })));
        }
        store.poke();
        await waitForCaughtUp(run.scheduler, store, REPO);
        expect(run.scheduler.queuedTimers()).toHaveLength(RUNS * TIMERS.length);
        const pick = (): [string, string] => [runId(Math.floor(random() * RUNS)), TIMERS[Math.floor(random() * TIMERS.length)] as string];
        const races: Promise<unknown>[] = [];
        for (let r = 0; r < 12; r++) {
          const turns = Math.floor(random() * 30);
          const kind = Math.floor(random() * 4);
          const [target, timerId] = pick();
          races.push(
            (async () => {
              for (let t = 0; t < turns; t++) await new Promise<void>((resolve) => setImmediate(resolve));
              if (kind === 0) await run.scheduler.cancelTimer(REPO, target, timerId, "race");
              else if (kind === 1) await append(other, target, (log) => (log.state.pendingTimers.has(timerId) ? [{ type: "TimerCancelled", at: isoFromMs(clock.now()), data: { timerId, reason: "race" } }] : []));
              else if (kind === 2) await append(random() < 0.5 ? store : other, target, () => [{ type: "TimerSet", at: isoFromMs(clock.now()), data: { timerId, fireAt: isoFromMs(clock.now()) } }]);
              else await append(other, target, () => [{ type: "RunCompleted", at: isoFromMs(clock.now()) }]);
            })(),
          );
        }
        await Promise.all([clock.advance(60_000), ...races]);
        store.poke();
        await waitForCaughtUp(run.scheduler, store, REPO);
        await clock.advance(120_000);
        await waitForCaughtUp(run.scheduler, store, REPO);
        const logs = await readRepoLogs(store, REPO);
        expect(checkLogs(logs)).toEqual([]);
        expect(armedByLog(logs).filter((t) => Date.parse(t.fireAt) <= clock.now())).toEqual([]);
        const fired = [...logs.values()].flatMap((log) => log.events.filter((e) => e.type === "TimerFired"));
        expect(fired.length).toBeGreaterThan(0);
      } finally {
        await run.scheduler.stop();
        await store.close();
        await other.close();
      }
    });
  }
});
