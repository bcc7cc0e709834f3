/**
 * Group commit (`minCommitIntervalMs`): fire commits of one deployment start at least the
 * interval apart on the injected monotonic time; timers that come due in between go out
 * together; a timer on a quiet deployment is not held back. Everything runs on the FakeClock:
 * the throttle waits on the injected timers, so the interval passes only when the test
 * advances the clock, and no real time is read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import { expectCode } from "../../helpers/expect-code.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, firedOf, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const START = "2026-03-01T00:00:00.000Z";
const at = (ms: number): string => new Date(Date.parse(START) + ms).toISOString();

async function setUp(intervalMs: number): Promise<Harness> {
  const harness = await createHarness(START, { minCommitIntervalMs: intervalMs });
  for (const [runId, timerId, ms] of [["r1", "a", 1_000], ["r2", "b", 1_001], ["r3", "c", 1_001]] as const) {
    await harness.append(runId, { type: "TimerSet", data: { timerId, fireAt: at(ms) } });
  }
  await harness.scheduler.start();
  return harness;
}

/** Timer ids reported fired so far, sorted. */
const firedIds = (harness: Harness): string[] =>
  harness.events.flatMap((e) => (e.type === "fired" ? [e.timerId] : [])).sort();

describe("group commit", () => {
  it("holds timers that come due right after a commit until the interval has passed on the injected clock, then commits them together", async () => {
    h = await setUp(400);
    const commits0 = h.scheduler.stats().commits;
    await h.clock.advance(1_000); // a is due: committed at once
    expect(firedIds(h)).toEqual(["a"]);
    await h.clock.advance(1); // b and c come due while a's commit is young: held
    await h.clock.advance(398); // 399 ms after a's commit started: still held
    expect(firedIds(h)).toEqual(["a"]);
    await h.clock.advance(1); // 400 ms: both go out, in one commit
    expect(firedIds(h)).toEqual(["a", "b", "c"]);
    expect(h.scheduler.stats().commits - commits0).toBe(2);
    const shaOf = (timerId: string): string | undefined => {
      for (const e of h!.events) if (e.type === "fired" && e.timerId === timerId) return e.commitSha;
      return undefined;
    };
    expect(shaOf("c")).toBe(shaOf("b"));
    expect(shaOf("b")).not.toBe(shaOf("a"));
    for (const runId of ["r1", "r2", "r3"]) expect(firedOf(await h.log(runId))).toHaveLength(1);
  });

  it("takes into a held commit the timers that came due while it waited, instead of leaving them for a commit after it", async () => {
    h = await setUp(400);
    await h.append("r4", { type: "TimerSet", data: { timerId: "d", fireAt: at(1_200) } });
    await h.clock.advance(1_000); // a committed at once
    await h.clock.advance(1); // b and c due: held until 1 400
    await h.clock.advance(199); // d due at 1 200, while b and c wait
    expect(firedIds(h)).toEqual(["a"]);
    await h.clock.advance(200); // 1 400: the held commit takes b, c and d
    expect(firedIds(h)).toEqual(["a", "b", "c", "d"]);
    const shaOf = (timerId: string): string | undefined => {
      for (const e of h!.events) if (e.type === "fired" && e.timerId === timerId) return e.commitSha;
      return undefined;
    };
    expect(shaOf("d")).toBe(shaOf("b"));
    for (const runId of ["r1", "r2", "r3", "r4"]) expect(firedOf(await h.log(runId))).toHaveLength(1);
  });

  it("does not hold back a timer on a deployment that has not committed for a while", async () => {
    h = await setUp(5_000);
    await h.clock.advance(1_000);
    // The first fire commit of the deployment does not wait for the interval.
    expect(firedIds(h)).toEqual(["a"]);
  });

  it("with 0 commits back to back: every timer fires once, without the clock moving on", async () => {
    h = await setUp(0);
    await h.clock.advance(1_000);
    await h.clock.advance(1);
    expect(firedIds(h)).toEqual(["a", "b", "c"]);
  });

  it("stop() ends a pending group-commit wait and commits what is due, instead of waiting on a timer nobody advances", async () => {
    h = await setUp(60_000);
    await h.clock.advance(1_001); // a committed; b and c held for a minute of fake time
    expect(firedIds(h)).toEqual(["a"]);
    await h.scheduler.stop();
    expect(firedIds(h)).toEqual(["a", "b", "c"]);
    for (const runId of ["r1", "r2", "r3"]) expect(firedOf(await h.log(runId))).toHaveLength(1);
  });

  it("refuses an interval that is not a number of milliseconds in 0 … 60000", async () => {
    h = await createHarness(START);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 60_001, "8" as unknown as number]) {
      expectCode(() => createWorkflowHostScheduler({ repoStore: h!.store, principal: null, listActiveDeployments: () => [], clock: h!.clock.clock, minCommitIntervalMs: bad }), "time_invalid");
    }
  });
});

describe("a held commit taking what came due, raced by changes to the timers", () => {
  it("fires each armed generation once: a replaced timer by its new generation, a cancelled timer and an ended run's not at all, on every deployment", async () => {
    h = await createHarness(START, { minCommitIntervalMs: 400 }, ["dep", "dep2"]);
    const appendTo = async (repoId: string, runId: string, body: Record<string, unknown>): Promise<void> => {
      await appendRunEvents({ store: h!.store, principal: null, repoId, runId, message: `append to ${runId}`, decide: () => ({ append: [body], result: undefined }) });
    };
    await h.append("r1", { type: "TimerSet", data: { timerId: "a", fireAt: at(1_000) } });
    for (const [runId, timerId] of [["r2", "b"], ["r3", "c"], ["r4", "d"], ["r5", "e"], ["r6", "f"]] as const) {
      await h.append(runId, { type: "TimerSet", data: { timerId, fireAt: at(1_200) } });
    }
    await appendTo("dep", "r8", { type: "TimerSet", data: { timerId: "h", fireAt: at(1_450) } });
    await appendTo("dep2", "r7", { type: "TimerSet", data: { timerId: "g", fireAt: at(1_200) } });
    await h.scheduler.start();
    await h.clock.advance(1_000); // a committed at once; dep's next commit is held until 1 400
    await h.clock.advance(250); // b … f due at 1 200, waiting for the held commit
    await h.append("r4", { type: "TimerSet", data: { timerId: "d", fireAt: at(1_300) } }); // a new generation of d
    await h.append("r5", { type: "TimerCancelled", data: { timerId: "e" } });
    await h.append("r6", { type: "RunCompleted" });
    await h.append("r8", { type: "TimerSet", data: { timerId: "h", fireAt: at(1_350) } }); // h moved earlier
    await h.clock.advance(150); // 1 400: the held commit cuts its batch
    await h.clock.advance(2_000);
    const log = async (runId: string, repoId = "dep") => {
      const reads = await h!.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "refs/heads/main");
      return [...(await readRunLog(reads, runId)).events];
    };
    expect(firedOf(await log("r1"))).toHaveLength(1);
    expect(firedOf(await log("r2"))).toHaveLength(1);
    expect(firedOf(await log("r3"))).toHaveLength(1);
    expect(firedOf(await log("r4")).map((f) => f.scheduledFor)).toEqual([at(1_300)]);
    expect(firedOf(await log("r5"))).toEqual([]);
    expect(firedOf(await log("r6"))).toEqual([]);
    expect(firedOf(await log("r7", "dep2"))).toHaveLength(1);
    expect(firedOf(await log("r8")).map((f) => f.scheduledFor)).toEqual([at(1_350)]);
  });
});
