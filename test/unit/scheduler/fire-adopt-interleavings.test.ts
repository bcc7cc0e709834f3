/**
 * A fire commit plans runs kept as rows from their rows and adopts the fire back into the row
 * (fire-committer.ts adoptFromWrite, RunTable.adoptRow), reusing the plan's lookup while the run
 * table has not changed. Here something touches the runs between the plan and the adopt: another
 * writer's commit (a timer set, a signal, a run ended, a pushed file, a new run), a cancel
 * through the scheduler, a queue entry dropped, a refresh, a stop. Once everything settled and the
 * clock is past every timer, the view must hold what folding the log gives (checked through the
 * recovery index written at stop and through a restart), and each armed generation has fired
 * exactly once (none after its run ended or it was cancelled).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/workflow/types.js";
import { afterPlan } from "../../helpers/after-plan.js";
import { createHarness, recoveryIndexOf, tipOidsOf, REPO, until, type Harness } from "./harness.js";

const START = "2026-01-01T00:00:00.000Z";
const RUNS = ["r-1", "r-2", "r-3", "r-4"];

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});


const event = (seq: number, type: string, data: Record<string, unknown>): string => JSON.stringify({ seq, type, at: "2026-01-01T00:00:30.000Z", data });

/** Things done while a fire commit of r-1 … r-4 (each's timer `t`; r-4 also has a later `u`) is between plan and adopt. */
const MEANWHILE: Record<string, (h: Harness) => Promise<unknown>> = {
  "a timer set on a fired run by another writer": (x) => x.append("r-2", { type: "TimerSet", data: { timerId: "v", fireAt: "2026-01-01T00:03:00.000Z" } }),
  "a signal received by a fired run": (x) => x.append("r-2", { type: "SignalReceived", signalName: "go", signalId: "s-1", payload: null }),
  "a fired run ended by another writer": (x) => x.append("r-2", { type: "RunCompleted", data: {} }),
  "a pushed event file for a fired run": (x) => x.rawWrite({ "runs/r-2/events/3.json": event(3, "TimerSet", { timerId: "v", fireAt: "2026-01-01T00:03:00.000Z" }) }),
  "a new run pushed": (x) => x.rawWrite({ "runs/r-9/events/1.json": event(1, "WorkflowStarted", { workflow: "w" }), "runs/r-9/events/2.json": event(2, "TimerSet", { timerId: "t", fireAt: "2026-01-01T00:02:00.000Z" }) }),
  "a later timer of a fired run cancelled through the scheduler": (x) => x.scheduler.cancelTimer(REPO, "r-4", "u"),
  "a fired timer's queue entry cancelled": async (x) => x.scheduler.cancelQueued("r-1", "t"),
  "a fired timer's queue entry dropped": async (x) => x.scheduler.dropQueued(REPO, "r-3", "t"),
  "a refresh": (x) => x.scheduler.refresh(),
  "the scheduler stopped": (x) => x.scheduler.stop(),
};

/** Each timer generation's fate in a log: fires per TimerSet, by `timerId@seq`; and whether the run ended. */
function fates(log: readonly RunEvent[]): { fired: Map<string, number>; open: string[]; terminal: string | null } {
  const fired = new Map<string, number>();
  const current = new Map<string, string>();
  let terminal: string | null = null;
  for (const e of log) {
    const data = (e as { data?: { timerId?: string } }).data;
    if (e.type === "TimerSet" && data?.timerId !== undefined) {
      const key = `${data.timerId}@${e.seq}`;
      fired.set(key, 0);
      current.set(data.timerId, key);
    } else if (e.type === "TimerFired" && data?.timerId !== undefined) {
      const key = current.get(data.timerId) ?? `${data.timerId}@none`;
      // A fire after the run ended counts against it.
      fired.set(key, (fired.get(key) ?? 0) + (terminal === null ? 1 : 100));
      current.delete(data.timerId);
    } else if (e.type === "TimerCancelled" && data?.timerId !== undefined) {
      const key = current.get(data.timerId);
      if (key !== undefined) fired.set(key, (fired.get(key) ?? 0) + 1);
      current.delete(data.timerId);
    } else if (e.type === "RunCompleted" || e.type === "RunFailed" || e.type === "RunCancelled") terminal = e.type;
  }
  return { fired, open: [...current.values()], terminal };
}

/**
 * The recovery index the last stop wrote against the log at the tip, run by run; `settled`: the
 * clock is past every timer, so each generation fired (or was cancelled) exactly once.
 */
async function check(x: Harness, settled: boolean): Promise<void> {
  const index = await recoveryIndexOf(x.store);
  for (const runId of [...RUNS, "r-9"]) {
    const log = await x.log(runId);
    if (log.length === 0) {
      expect({ runId, summary: index.get(runId) }).toEqual({ runId, summary: undefined });
      continue;
    }
    const fate = fates(log);
    if (settled) {
      // Every generation fired or was cancelled exactly once; a run that ended fires nothing after.
      for (const [key, count] of fate.fired) expect({ runId, key, count }).toEqual({ runId, key, count: fate.terminal !== null && count === 0 ? 0 : 1 });
      if (fate.terminal === null) expect({ runId, open: fate.open }).toEqual({ runId, open: [] });
    } else for (const [key, count] of fate.fired) expect({ runId, key, fires: Math.min(count, 2) }).toEqual({ runId, key, fires: count === 0 ? 0 : 1 });
    const last = log[log.length - 1]?.seq as number;
    const summary = index.get(runId);
    const pending = summary?.pendingTimers.map((p) => p.timerId).sort();
    expect({ runId, ...summary, pendingTimers: pending }).toEqual({
      runId,
      ...(await tipOidsOf(x.store, runId, last)),
      maxFileSeq: last,
      lastSeq: last,
      terminal: fate.terminal,
      pendingTimers: fate.terminal === null ? fate.open.map((key) => key.slice(0, key.indexOf("@"))).sort() : pending,
    });
  }
}

/** For a push (no watcher here): when the view has applied it. */
const APPLIED: Record<string, (x: Harness) => boolean> = {
  "a pushed event file for a fired run": (x) => x.scheduler.queuedTimers().some((t) => t.runId === "r-2" && t.timerId === "v"),
  "a new run pushed": (x) => x.scheduler.stats().runs === RUNS.length + 1,
};

describe("a fire commit's adopt when something touches its runs between plan and adopt", () => {
  for (const [what, meanwhile] of Object.entries(MEANWHILE)) {
    it(what, async () => {
      const x = await createHarness(START);
      h = x;
      for (const runId of RUNS) await x.append(runId, { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-01T00:01:00.000Z" } });
      await x.append("r-4", { type: "TimerSet", data: { timerId: "u", fireAt: "2026-01-01T00:04:00.000Z" } });
      let action: Promise<unknown> | null = null;
      const store = afterPlan(x.store, () => {
        action ??= meanwhile(x).catch((error: unknown) => error);
      });
      // Restarted: recovery keeps the runs as rows.
      await x.restart({ repoStore: store });
      const scheduler = x.scheduler;
      await x.clock.advance(61_000);
      await scheduler.idle();
      expect(action).not.toBeNull();
      await action;
      await scheduler.idle();
      const applied = APPLIED[what];
      if (applied !== undefined) {
        await until(() => {
          x.store.poke();
          return applied(x);
        }, what);
      }
      await scheduler.idle();
      // What the view holds (the recovery index written at stop) is the log's fold.
      await scheduler.stop();
      await check(x, false);
      // Past every timer: each armed generation fires now if it has not.
      await x.restart({ repoStore: x.store });
      await x.clock.advance(10 * 60_000);
      await x.scheduler.idle();
      await x.clock.advance(1_000);
      await x.scheduler.idle();
      await x.scheduler.stop();

      await check(x, true);
    });
  }
});

describe("a fire commit's adopt when a listener touches a later run of the same commit during the adopt", () => {
  it("an `armed` report (a series' next tick, armed while the commit's runs are adopted) whose listener looks up a run adopted after it", async () => {
    const x = await createHarness(START);
    h = x;
    // Adopted in run id order: "a" (a series: its next tick is armed and reported) before "b" and "c".
    await x.append("a", { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "tick", fireAt: "2026-01-01T00:01:00.000Z", cron: "* * * * *", timezone: "UTC" } });
    for (const runId of ["b", "c"]) await x.append(runId, { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-01T00:01:00.000Z" } });
    let touched = 0;
    // Restarted: recovery keeps the runs as rows.
    await x.restart({
      onEvent: (e) => {
        x.events.push(e);
        if (e.type !== "armed" || e.runId !== "a" || e.fireAt !== "2026-01-01T00:02:00.000Z") return;
        touched += 1;
        // A synchronous call that looks "b" up (dropQueued of a timer it does not have changes nothing else): its row becomes a record.
        x.scheduler.dropQueued(REPO, "b", "none");
      },
    });
    await x.clock.advance(61_000);
    await x.scheduler.idle();
    expect(touched).toBe(1);
    await x.scheduler.stop();
    const index = await recoveryIndexOf(x.store);
    for (const runId of ["b", "c"]) {
      const log = await x.log(runId);
      expect(log.map((e) => e.type)).toEqual(["WorkflowStarted", "TimerSet", "TimerFired"]);
      expect({ runId, ...index.get(runId) }).toEqual({
        runId,
        ...(await tipOidsOf(x.store, runId, 3)),
        maxFileSeq: 3,
        lastSeq: 3,
        terminal: null,
        pendingTimers: [],
      });
    }
    // And nothing fires twice: past "b"'s and "c"'s timers, only the series ticks on.
    await x.restart({ repoStore: x.store });
    await x.clock.advance(60_000);
    await x.scheduler.idle();
    for (const runId of ["b", "c"]) expect({ runId, fired: ofTypeCount(await x.log(runId), "TimerFired") }).toEqual({ runId, fired: 1 });
  });
});

function ofTypeCount(log: readonly RunEvent[], type: string): number {
  return log.filter((e) => e.type === type).length;
}
