/**
 * Appends to one deployment that arrive while a commit is in flight share the next commit
 * (issue 17, item 6), and each caller still gets its own result or its own error.
 */
import { createFsFromVolume, Volume } from "memfs";
import { describe, expect, it } from "vitest";
import { createWorkflowHostSignalChannel } from "../../../seams/signals/signal-channel.js";
import { WorkflowHostError } from "../../../src/errors.js";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { KindHandler, RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { workflowRunKind, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";

const RID = { kind: WORKFLOW_RUN_KIND, id: "dep" } as const;
const AT = "2026-05-01T00:00:00.000Z";

/** A store on memfs plus a count of the commits it made. */
async function countingStore(handler: KindHandler = workflowRunKind({ maxEventBytes: 4096 })): Promise<{ store: RepoStore; commits: () => number; prospectiveTrees: () => number }> {
  const clock = createFakeClock(AT);
  let prospectiveTrees = 0;
  const counted: KindHandler = {
    ...handler,
    validatePush: async (ctx) => {
      prospectiveTrees += 1;
      await handler.validatePush?.(ctx);
    },
  };
  const base = createRepoStore({ dataDir: "/data", fs: createFsFromVolume(new Volume()), kindHandlers: [counted], authorize: allowAll, clock: clock.clock, watch: false });
  await base.initRepo(null, RID);
  let commits = 0;
  const store: RepoStore = Object.create(base) as RepoStore;
  Object.assign(store, {
    writeTreeDelta: async (...args: Parameters<RepoStore["writeTreeDelta"]>) => {
      const written = await base.writeTreeDelta(...args);
      if (written.committed) commits += 1;
      return written;
    },
  });
  return { store, commits: () => commits, prospectiveTrees: () => prospectiveTrees };
}

function step(store: RepoStore, runId: string, data: Record<string, unknown> = {}) {
  return appendRunEvents<number>({
    store,
    principal: null,
    repoId: "dep",
    runId,
    message: `step of ${runId}`,
    maxEventBytes: 4096,
    decide: (log) => ({ append: [{ type: "StepCompleted", at: AT, data }], result: Math.max(log.maxFileSeq + 1, 1) }),
  });
}

async function events(store: RepoStore, runId: string) {
  const log = await readRunLog(await store.openCommittedReads(null, RID, "refs/heads/main"), runId);
  return log.events;
}

describe("appends to one deployment share commits", () => {
  it("N concurrent deliveries to different runs: fewer commits than deliveries, each result its own", async () => {
    const { store, commits } = await countingStore();
    const clock = createFakeClock(AT);
    const channels = Array.from({ length: 20 }, (_, i) => createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: "dep", runId: `run-${i}`, clock: clock.clock }));
    // Each run gets one first event, then two signals each, all at once.
    await Promise.all(channels.map((_, i) => step(store, `run-${i}`)));
    const before = commits();
    const results = await Promise.all(channels.flatMap((c, i) => [c.deliver("go", { i }, `a-${i}`), c.deliver("go", { i }, `b-${i}`)]));
    expect(commits() - before).toBeLessThan(results.length);
    for (let i = 0; i < 20; i++) {
      expect(results[2 * i]).toMatchObject({ signalId: `a-${i}`, seq: 2, duplicate: false });
      expect(results[2 * i + 1]).toMatchObject({ signalId: `b-${i}`, seq: 3, duplicate: false });
      expect((await events(store, `run-${i}`)).map((e) => e.seq)).toEqual([1, 2, 3]);
    }
  });

  it("the same signalId twice in one batch: one SignalReceived, the second reports duplicate", async () => {
    const { store } = await countingStore();
    const clock = createFakeClock(AT);
    await step(store, "r");
    const channel = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: "dep", runId: "r", clock: clock.clock });
    const other = createWorkflowHostSignalChannel({ repoStore: store, principal: null, repoId: "dep", runId: "q", clock: clock.clock });
    const [, first, second] = await Promise.all([other.deliver("go", 0, "z"), channel.deliver("go", 1, "same"), channel.deliver("go", 2, "same")]);
    expect(first).toMatchObject({ seq: 2, duplicate: false });
    expect(second).toMatchObject({ seq: 2, duplicate: true });
    const received = (await events(store, "r")).filter((e) => e.type === "SignalReceived");
    expect(received).toHaveLength(1);
  });

  it("one oversized event in a batch fails only its caller, with nothing written for it", async () => {
    const { store } = await countingStore();
    await Promise.all([step(store, "a"), step(store, "b"), step(store, "c")]);
    const outcomes = await Promise.allSettled([step(store, "a", { n: 1 }), step(store, "b", { big: "x".repeat(10_000) }), step(store, "c", { n: 3 })]);
    expect(outcomes[0]).toMatchObject({ status: "fulfilled", value: { result: 2 } });
    expect(outcomes[1]).toMatchObject({ status: "rejected", reason: { code: "payload_too_large" } });
    expect(outcomes[2]).toMatchObject({ status: "fulfilled", value: { result: 2 } });
    expect((await events(store, "a")).map((e) => e.seq)).toEqual([1, 2]);
    expect((await events(store, "b")).map((e) => e.seq)).toEqual([1]);
    expect((await events(store, "c")).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("a decide that throws fails only its caller; the others of the batch commit", async () => {
    const { store } = await countingStore();
    const boom = appendRunEvents({
      store,
      principal: null,
      repoId: "dep",
      runId: "bad",
      message: "throws",
      decide: () => {
        throw new Error("decide failed");
      },
    });
    const outcomes = await Promise.allSettled([step(store, "x"), boom, step(store, "y")]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ message: "decide failed" });
    expect((await events(store, "x")).map((e) => e.seq)).toEqual([1]);
    expect((await events(store, "y")).map((e) => e.seq)).toEqual([1]);
    expect(await events(store, "bad")).toEqual([]);
  });

  it("an append after a terminal event in the same batch is refused alone", async () => {
    const { store } = await countingStore();
    await step(store, "t");
    const end = appendRunEvents({ store, principal: null, repoId: "dep", runId: "t", message: "end", decide: () => ({ append: [{ type: "RunCompleted", at: AT, data: {} }], result: undefined }) });
    const outcomes = await Promise.allSettled([step(store, "u"), end, step(store, "t")]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: "event_invalid" });
    expect((await events(store, "t")).map((e) => e.type)).toEqual(["StepCompleted", "RunCompleted"]);
  });

  it("a batch that validatePush refuses is retried one append a commit: only the refused append fails", async () => {
    const inner = workflowRunKind({ maxEventBytes: 4096 });
    const refusing: KindHandler = {
      ...inner,
      validatePush: async (ctx) => {
        if (ctx.changes.some((c) => c.path.startsWith("runs/refused/"))) throw new WorkflowHostError("event_invalid", "refused by policy", { path: "runs/refused/" });
        await inner.validatePush?.(ctx);
      },
    };
    const { store, commits, prospectiveTrees } = await countingStore(refusing);
    const outcomes = await Promise.allSettled([step(store, "p"), step(store, "refused"), step(store, "q")]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "event_invalid" });
    expect((await events(store, "p")).map((e) => e.seq)).toEqual([1]);
    expect((await events(store, "q")).map((e) => e.seq)).toEqual([1]);
    expect(await events(store, "refused")).toEqual([]);
    // Every tree that was committed was validated first.
    expect(prospectiveTrees()).toBeGreaterThanOrEqual(commits());
  });
});
