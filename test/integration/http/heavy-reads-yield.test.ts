/**
 * Reads over every run of a deployment give the event loop a turn as they go (the project's time
 * slicer, src/time/time-slicer.ts), so no read-only request holds the host's event loop: the
 * lock's heartbeat, fires and other requests go on while a listing or a sync plan is made.
 * Shown by order, never by time: the slicers here yield at every pause (slice 0 ms) and count
 * their pauses; a callback put on the real event loop at the first pause runs before the read
 * ends.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createScheduleControls } from "../../../seams/scheduler/schedule-controls.js";
import { listPendingTimers } from "../../../src/host/list-pending-timers.js";
import { createTimeSlicer, type TimeSlicer } from "../../../src/time/time-slicer.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { ADMIN_TOKEN, jsonOf, READER_TOKEN, startHttpHarness, type HttpHarness } from "./http-harness.js";

const tempDir = useTempDirs("wh-http-heavy-reads-");
let harness: HttpHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

const RUNS = 24;
const put = (body: unknown): RequestInit => ({ method: "PUT", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

/**
 * Pauses that each wait for a macrotask, counted; at the first one a callback is put on the
 * event loop (`setImmediate`), and `turnAt` is how many pauses had been made when it ran.
 */
function countingPauses(): { pause: () => Promise<void>; count: () => number; turnAt: () => number | null } {
  const slicer = createTimeSlicer(0);
  let count = 0;
  let turnAt: number | null = null;
  return {
    pause() {
      if (count === 0) setImmediate(() => (turnAt = count));
      count += 1;
      return slicer.pause();
    },
    count: () => count,
    turnAt: () => turnAt,
  };
}

/**
 * Slicers for the handler (`timeSlicer`), one per listing's work, counted in `works()`: the first
 * `held` listings wait at their first pause until `release()`; `inside` resolves when all got there.
 */
function firstListingHeld(held = 1): { timeSlicer: () => TimeSlicer; inside: Promise<void>; release: () => void; works: () => number } {
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let works = 0;
  let waiting = 0;
  return {
    timeSlicer: (): TimeSlicer => {
      const mine = works < held;
      works += 1;
      let paused = false;
      return {
        pause() {
          if (!mine || paused) return Promise.resolve();
          paused = true;
          waiting += 1;
          if (waiting === held) entered();
          return gate;
        },
      };
    },
    inside,
    release,
    works: () => works,
  };
}

/**
 * `payments` with RUNS runs, each with an hourly series. Made in the store behind the host's
 * back, and never discovered (once an hour): the host does not serve it, so its timers are
 * listed by folding the logs, a heavy read (a served deployment's come from the scheduler's
 * memory, design notes §76).
 */
async function manyRuns(handler: Parameters<typeof startHttpHarness>[2] = {}, served: readonly string[] = []): Promise<HttpHarness> {
  // `served` are made first, through the host (which then serves them): a deployment made after
  // them is not discovered.
  harness = await startHttpHarness(join(await tempDir(), "data"), served, handler, { discoverEveryMs: 3_600_000 });
  await harness.host.store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: "payments" });
  for (let i = 0; i < RUNS; i += 1) expect((await harness.request(`/v1/deployments/payments/runs/r${i}/timers/hourly`, put({ cron: "0 * * * *" }))).status).toBe(200);
  return harness;
}

describe("pending timers across runs", () => {
  it("listPendingTimers pauses before each run, and the event loop turns before the listing ends", async () => {
    const h = await manyRuns();
    const p = countingPauses();
    const report = await listPendingTimers(h.host.store, { principal: null, clock: () => new Date(), pause: p.pause });
    expect(report.timers).toHaveLength(RUNS);
    expect(p.count()).toBeGreaterThanOrEqual(RUNS);
    expect(p.turnAt()).not.toBeNull();
    expect(p.turnAt()).toBeLessThan(p.count());
  });

  it("GET /v1/timers with a read-only token yields through the handler's slicer", async () => {
    const slicers: ReturnType<typeof countingPauses>[] = [];
    const h = await manyRuns({
      timeSlicer: (): TimeSlicer => {
        const p = countingPauses();
        slicers.push(p);
        return { pause: p.pause };
      },
    });
    const { status, body } = await jsonOf(await h.request("/v1/deployments/payments/timers", { token: READER_TOKEN }));
    expect(status).toBe(200);
    expect(body["timers"]).toHaveLength(RUNS);
    expect(slicers).toHaveLength(1);
    const [p] = slicers as [ReturnType<typeof countingPauses>];
    // One pause per run read, and one per series' next ticks at least.
    expect(p.count()).toBeGreaterThanOrEqual(2 * RUNS);
    expect(p.turnAt()).toBeLessThan(p.count());
  });
});

describe("schedule sync planning", () => {
  it("a dry-run sync of many declared series pauses per run read and per run planned", async () => {
    const h = await manyRuns();
    const p = countingPauses();
    const controls = createScheduleControls({ store: h.host.store, principal: null, clock: () => new Date(), pause: p.pause });
    const declared = Array.from({ length: 3 * RUNS }, (_, i) => ({ runId: `s${i}`, timerId: "t", cron: "0 * * * *" }));
    const { plan, commits } = await controls.syncSchedules("payments", declared, { dryRun: true });
    expect(plan.create).toHaveLength(3 * RUNS);
    expect(commits).toEqual([]);
    // RUNS runs read, 3 × RUNS runs planned (each declared series in its own run).
    expect(p.count()).toBeGreaterThanOrEqual(RUNS + 3 * RUNS);
    expect(p.turnAt()).toBeLessThan(p.count());
  });

  it("listSeries pauses before each run", async () => {
    const h = await manyRuns();
    const p = countingPauses();
    const controls = createScheduleControls({ store: h.host.store, principal: null, clock: () => new Date(), pause: p.pause });
    expect((await controls.listSeries("payments")).series).toHaveLength(RUNS);
    expect(p.count()).toBeGreaterThanOrEqual(RUNS);
    expect(p.turnAt()).toBeLessThan(p.count());
  });
});

describe("one run's log", () => {
  it("describe folds a run's log with a pause before each event", async () => {
    const h = await manyRuns();
    const controls = createScheduleControls({ store: h.host.store, principal: null, clock: () => new Date() });
    const TRIGGERS = 20;
    for (let i = 0; i < TRIGGERS; i += 1) expect((await controls.trigger("payments", "r0", "hourly", `q${i}`)).outcome).toBe("triggered");
    const p = countingPauses();
    const counted = createScheduleControls({ store: h.host.store, principal: null, clock: () => new Date(), pause: p.pause });
    const described = await counted.describe("payments", "r0", "hourly");
    expect(described.history.fires).toHaveLength(TRIGGERS);
    // RunStarted (if any), TimerSet and the fires: one pause each at least.
    expect(p.count()).toBeGreaterThanOrEqual(TRIGGERS + 1);
    expect(p.turnAt()).toBeLessThan(p.count());
  });
});

describe("heavy reads at once", () => {
  it("one more heavy read than the server runs and queues is 503 busy with Retry-After; the one running ends 200", async () => {
    const { timeSlicer, inside, release } = firstListingHeld();
    // The first listing waits at its first pause until released.
    const h = await manyRuns({ heavyReads: { concurrency: 1, queue: 0 }, timeSlicer });
    const running = h.request("/v1/timers", { token: READER_TOKEN });
    await inside;
    const refused = await h.request("/v1/deployments/payments/timers", { token: READER_TOKEN });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(((await refused.json()) as { code: string }).code).toBe("busy");
    // Requests that are not heavy reads are served meanwhile.
    expect((await h.request("/healthz", { token: null })).status).toBe(200);
    release();
    expect((await running).status).toBe(200);
    expect((await h.request("/v1/deployments/payments/timers", { token: READER_TOKEN })).status).toBe(200);
  });
  it("the timers of a deployment the host serves are no heavy read: answered from memory while the gate is full", async () => {
    const { timeSlicer, inside, release } = firstListingHeld();
    const h = await manyRuns({ heavyReads: { concurrency: 1, queue: 0 }, timeSlicer }, ["served"]);
    expect((await h.request("/v1/deployments/served/runs/r1/timers/t", put({ fireAt: "2099-01-01T00:00:00Z" }))).status).toBe(200);
    // The fold of payments holds the one turn; a second fold would be refused (the test above).
    const running = h.request("/v1/deployments/payments/timers", { token: ADMIN_TOKEN });
    await inside;
    const served = await jsonOf(await h.request("/v1/deployments/served/timers", { token: ADMIN_TOKEN }));
    expect(served.status).toBe(200);
    expect(served.body["deployments"]).toEqual([{ repoId: "served", commitSha: expect.any(String), source: "scheduler" }]);
    expect((served.body["timers"] as { timerId: string }[]).map((t) => t.timerId)).toEqual(["t"]);
    release();
    const folded = await jsonOf(await running);
    expect(folded.status).toBe(200);
    expect((folded.body["deployments"] as { source: string }[])[0]?.source).toBe("log");
  });
  it("listings answered from memory are bounded too: twice the heavy reads at once, then 503 busy", async () => {
    // One heavy read at once and none waiting: two listings at once, none waiting.
    const { timeSlicer, inside, release } = firstListingHeld(2);
    const h = await manyRuns({ heavyReads: { concurrency: 1, queue: 0 }, timeSlicer }, ["served"]);
    expect((await h.request("/v1/deployments/served/runs/r1/timers/t", put({ fireAt: "2099-01-01T00:00:00Z" }))).status).toBe(200);
    const first = h.request("/v1/deployments/served/timers", { token: ADMIN_TOKEN });
    const second = h.request("/v1/deployments/served/timers", { token: ADMIN_TOKEN });
    await inside;
    const refused = await h.request("/v1/deployments/served/timers", { token: ADMIN_TOKEN });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { code: string }).code).toBe("busy");
    release();
    for (const answer of [await first, await second]) {
      const body = await jsonOf(answer);
      expect(body.status).toBe(200);
      expect((body.body["timers"] as { timerId: string }[]).map((t) => t.timerId)).toEqual(["t"]);
    }
  });
  it("a heavy read whose client hangs up while it waits leaves the queue: its work never runs, and the gauge counts it out", async () => {
    const { timeSlicer, inside, release, works } = firstListingHeld();
    const h = await manyRuns({ heavyReads: { concurrency: 1, queue: 1 }, timeSlicer });
    const gauge = async (): Promise<{ running: number; waiting: number }> => {
      const text = await (await h.request("/metrics")).text();
      const value = (state: string): number => Number(new RegExp(`^workflow_host_http_heavy_reads\\{state="${state}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? Number.NaN);
      return { running: value("running"), waiting: value("waiting") };
    };
    /** Reads the gauge until it shows `want` (a bounded number of turns, no time asserted). */
    const gaugeBecomes = async (want: { running: number; waiting: number }): Promise<{ running: number; waiting: number }> => {
      let seen = await gauge();
      for (let i = 0; i < 200 && (seen.running !== want.running || seen.waiting !== want.waiting); i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        seen = await gauge();
      }
      return seen;
    };
    const running = h.request("/v1/timers", { token: READER_TOKEN });
    await inside;
    const hangsUp = new AbortController();
    const waiting = h.request("/v1/deployments/payments/timers", { token: READER_TOKEN, signal: hangsUp.signal });
    expect(await gaugeBecomes({ running: 1, waiting: 1 })).toEqual({ running: 1, waiting: 1 });
    hangsUp.abort();
    await expect(waiting).rejects.toThrow();
    expect(await gaugeBecomes({ running: 1, waiting: 0 })).toEqual({ running: 1, waiting: 0 });
    release();
    expect((await running).status).toBe(200);
    expect((await h.request("/v1/deployments/payments/timers", { token: READER_TOKEN })).status).toBe(200);
    // The first listing and the last: the one whose client hung up never ran.
    expect(works()).toBe(2);
  });
});
