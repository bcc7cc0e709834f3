/**
 * `syncSchedules` against random pairs (current set, desired set): after a sync the armed
 * sync-owned series equal the declared ones, a second sync commits nothing, and series that
 * sync does not own are never touched.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { SYNC_OWNER, type DeclaredSchedule } from "../../../src/workflow/schedule/sync-plan.js";
import type { PendingTimer } from "../../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { readRepoLogs } from "../../helpers/fixture-scheduler.js";
import { createHarness, REPO } from "../scheduler/harness.js";

const NOW = "2026-05-01T10:00:00.000Z";
const CRONS = ["0 * * * *", "*/15 * * * *", "0 9 * * 1-5", "30 2 * * *"];
const ZONES = [undefined, "UTC", "Europe/Rome", "America/New_York"];

const key = (runId: string, timerId: string): string => `${runId}/${timerId}`;

const seriesArb = fc.record({
  runId: fc.constantFrom("a", "b", "c"),
  timerId: fc.constantFrom("t1", "t2", "t3"),
  cron: fc.constantFrom(...CRONS),
  timezone: fc.constantFrom(...ZONES),
  misfire: fc.constantFrom(undefined, "skip", "latest", "all"),
  maxTicks: fc.constantFrom(undefined, 5, 50),
  endAt: fc.constantFrom(undefined, "2027-01-01T00:00:00.000Z"),
  jitterMs: fc.constantFrom(undefined, 0, 30_000),
});
type Series = typeof seriesArb extends fc.Arbitrary<infer T> ? T : never;
const uniqueSeries = (max: number) => fc.uniqueArray(seriesArb, { maxLength: max, selector: (s) => key(s.runId, s.timerId) });

function declared(s: Series): DeclaredSchedule {
  const out: Record<string, unknown> = { runId: s.runId, timerId: s.timerId, cron: s.cron };
  for (const name of ["timezone", "misfire", "maxTicks", "endAt", "jitterMs"] as const) if (s[name] !== undefined) out[name] = s[name];
  return out as unknown as DeclaredSchedule;
}

function config(p: Pick<PendingTimer, "cron" | "timezone" | "misfire" | "maxTicks" | "endAt" | "jitterMs">): Record<string, unknown> {
  return { cron: p.cron, timezone: p.timezone ?? "UTC", misfire: p.misfire, maxTicks: p.maxTicks, endAt: p.endAt, jitterMs: p.jitterMs };
}

async function armedSeries(store: Parameters<typeof readRepoLogs>[0]): Promise<Map<string, PendingTimer>> {
  const out = new Map<string, PendingTimer>();
  for (const [runId, log] of await readRepoLogs(store, REPO)) {
    for (const p of log.state.pendingTimers.values()) if (p.cron !== undefined) out.set(key(runId, p.timerId), p);
  }
  return out;
}

describe("syncSchedules", () => {
  it("makes the armed sync-owned series equal the declared set, commits nothing the second time, and never touches series it does not own", async () => {
    await fc.assert(
      fc.asyncProperty(uniqueSeries(6), fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }), uniqueSeries(6), async (current, owned, desired) => {
        const h = await createHarness(NOW);
        try {
          const controls = createScheduleControls({ store: h.store, principal: null, clock: h.clock.clock });
          for (const [i, s] of current.entries()) {
            const zone = s.timezone ?? "UTC";
            await h.append(s.runId, {
              type: "TimerSet",
              data: { ...declared(s), timezone: zone, fireAt: nextTick(s.cron, zone, NOW), ...(owned[i] === true ? { owner: SYNC_OWNER } : {}) },
            });
          }
          const before = await armedSeries(h.store);
          const unowned = [...before].filter(([, p]) => p.owner !== SYNC_OWNER);

          await controls.syncSchedules(REPO, desired.map(declared));
          const after = await armedSeries(h.store);

          // Series sync does not own: exactly as before (same generation, same fields).
          for (const [k, p] of unowned) expect(after.get(k)).toEqual(p);
          // Sync-owned series: exactly the declared ones that do not collide with an unowned one.
          const unownedKeys = new Set(unowned.map(([k]) => k));
          const expected = new Map(desired.filter((d) => !unownedKeys.has(key(d.runId, d.timerId))).map((d) => [key(d.runId, d.timerId), config(declared(d))]));
          const ownedAfter = new Map([...after].filter(([, p]) => p.owner === SYNC_OWNER).map(([k, p]) => [k, config(p)]));
          expect(ownedAfter).toEqual(expected);

          const tip = await h.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main");
          const again = await controls.syncSchedules(REPO, desired.map(declared));
          expect(again.commits).toEqual([]);
          expect(await h.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main")).toBe(tip);
        } finally {
          await h.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it("prints the plan and writes nothing on a dry run; refuses a malformed declared set before any write", async () => {
    const h = await createHarness(NOW);
    try {
      const controls = createScheduleControls({ store: h.store, principal: null, clock: h.clock.clock });
      const tip = await h.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main");
      const dry = await controls.syncSchedules(REPO, [{ runId: "a", timerId: "t1", cron: "0 * * * *" }], { dryRun: true });
      expect(dry.plan.create.map((d) => d.timerId)).toEqual(["t1"]);
      expect(dry.commits).toEqual([]);
      await expect(controls.syncSchedules(REPO, [{ runId: "a", timerId: "t1", cron: "0 * * * *", extra: 1 }])).rejects.toMatchObject({ code: "config_invalid" });
      await expect(controls.syncSchedules(REPO, [{ runId: "a", timerId: "t1", cron: "61 * * * *" }])).rejects.toMatchObject({ code: "cron_invalid" });
      await expect(controls.syncSchedules(REPO, [{ runId: "a/b", timerId: "t1", cron: "0 * * * *" }])).rejects.toMatchObject({ code: "id_invalid" });
      await expect(
        controls.syncSchedules(REPO, [
          { runId: "a", timerId: "t1", cron: "0 * * * *" },
          { runId: "a", timerId: "t1", cron: "5 * * * *" },
        ]),
      ).rejects.toMatchObject({ code: "config_invalid" });
      expect(await h.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: REPO }, "refs/heads/main")).toBe(tip);
    } finally {
      await h.close();
    }
  });
});

describe("syncSchedules bounds", () => {
  it("starts a declared series at its startAt, and reports one with no slot left in its bounds instead of writing it", async () => {
    const h = await createHarness(NOW);
    try {
      const controls = createScheduleControls({ store: h.store, principal: null, clock: h.clock.clock });
      const r = await controls.syncSchedules(REPO, [
        { runId: "a", timerId: "later", cron: "0 * * * *", startAt: "2026-06-01T00:30:00Z" },
        { runId: "a", timerId: "over", cron: "0 * * * *", endAt: "2026-04-01T00:00:00Z" },
      ]);
      expect(r.plan.create.map((d) => d.timerId)).toEqual(["later"]);
      expect(r.plan.conflicts.map((c) => c.timerId)).toEqual(["over"]);
      const armed = await armedSeries(h.store);
      expect(armed.get("a/later")).toMatchObject({ fireAt: "2026-06-01T01:00:00.000Z", startAt: "2026-06-01T00:30:00.000Z", owner: SYNC_OWNER });
      expect(armed.has("a/over")).toBe(false);
    } finally {
      await h.close();
    }
  });
});
