/**
 * A fire commit plans each run from what the view holds of it (its record, or its row, not
 * made a record) and, once the commit landed, moves that very record or row to the state after
 * the commit, without looking the run up again. That holds only while the view's run table has
 * not changed since planning began: a run looked up meanwhile (its row made a record) must be
 * adopted as that record, or the view keeps the state before the fire while the log has moved on.
 * Checked through the recovery index the scheduler writes at stop (each run's seqs, oids and
 * timers as the view holds them), against the log at the tip.
 */
import { afterEach, describe, expect, it } from "vitest";
import { afterPlan } from "../../helpers/after-plan.js";
import { createHarness, recoveryIndexOf, tipOidsOf, firedOf, REPO, type Harness } from "./harness.js";

const START = "2026-01-01T00:00:00.000Z";
const RUNS = ["r-1", "r-2", "r-3"];

let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});


describe("a fire commit's adopt of the runs it planned from", () => {
  for (const lookedUp of [null, "r-2"]) {
    it(lookedUp === null ? "moves runs kept as rows to the state the log has after the fire" : "moves a run whose row was made a record during the write, as that record", async () => {
      h = await createHarness(START);
      for (const runId of RUNS) await h.append(runId, { type: "WorkflowStarted", data: { workflow: "w" } }, { type: "TimerSet", data: { timerId: "t", fireAt: "2026-01-01T00:01:00.000Z" } });
      // Restarted: recovery keeps the runs as rows.
      const store = afterPlan(h.store, () => {
        // Looks the run up (dropQueued of a timer it does not have changes nothing else): its row becomes a record.
        if (lookedUp !== null) h?.scheduler.dropQueued(REPO, lookedUp, "none");
      });
      await h.restart({ repoStore: store });
      await h.clock.advance(61_000);
      await h.scheduler.idle();
      expect(h.scheduler.queuedTimers()).toEqual([]);
      await h.scheduler.stop();

      const index = await recoveryIndexOf(h.store);
      for (const runId of RUNS) {
        const log = await h.log(runId);
        expect(firedOf(log)).toHaveLength(1);
        const last = log[log.length - 1]?.seq as number;
        expect({ runId, ...index.get(runId) }).toEqual({
          runId,
          ...(await tipOidsOf(h.store, runId, last)),
          maxFileSeq: last,
          lastSeq: last,
          terminal: null,
          pendingTimers: [],
        });
      }
    });
  }
});
