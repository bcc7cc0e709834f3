/**
 * Fire commits handed over by the committer: a consumer takes the events of a commit this
 * process just made without reading them back from the log, and still gets every event exactly
 * once, each run's in seq order, whatever order handovers and log reads come in.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readConsumerState } from "../../../seams/dispatch/consumer-state.js";
import { createDispatcher } from "../../../seams/dispatch/dispatcher.js";
import type { Delivery, Dispatcher } from "../../../seams/dispatch/dispatch-types.js";
import type { CommittedEvents } from "../../../seams/scheduler/scheduler-types.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createMemFs } from "../../helpers/memfs.js";
import { createReportLog, dispatchSetup, type DispatchSetup } from "./dispatch-harness.js";

const rid = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const AT = "2026-05-01T10:00:00.000Z";

function signal(runId: string, seq: number): { runId: string; seq: number; event: RunEvent } {
  return { runId, seq, event: { seq, type: "SignalReceived", signalName: "go", signalId: `${runId}-${seq}`, payload: null, at: AT } as RunEvent };
}

interface Rig {
  readonly store: RepoStore;
  readonly dispatcher: Dispatcher;
  readonly delivered: Delivery[];
  /** Commits whose events the dispatcher read back from the log. */
  readonly opened: Set<string>;
  /** Commits the events; returns the handover the committer would make (not yet made). */
  commit(events: readonly { runId: string; seq: number; event: RunEvent }[]): Promise<CommittedEvents>;
  waitDelivered(n: number): Promise<void>;
  close(): Promise<void>;
}

async function rig(): Promise<Rig> {
  const fs = createMemFs();
  const clock = createFakeClock(AT);
  const inner = openWorkflowStore({ dataDir: "/data", fs, watch: false, clock: clock.clock });
  await inner.initRepo(null, rid);
  const opened = new Set<string>();
  const store: RepoStore = Object.create(inner) as RepoStore;
  Object.assign(store, {
    openCommittedReads: (...args: Parameters<RepoStore["openCommittedReads"]>) => {
      opened.add(String(args[2]));
      return inner.openCommittedReads(...args);
    },
  });
  const reports = createReportLog();
  const delivered: Delivery[] = [];
  const dispatcher = createDispatcher({ repoStore: store, principal: null, listDeployments: async () => ["dep"], clock: clock.clock, timers: clock.timers, onEvent: (r) => reports.push(r) });
  dispatcher.add({ name: "c1", concurrency: 4, filter: { types: ["SignalReceived"] }, handler: (d) => void delivered.push(d) });
  await dispatcher.start();
  return {
    store,
    dispatcher,
    delivered,
    opened,
    async commit(events) {
      const puts = new Map(events.map((e) => [`runs/${e.runId}/events/${e.seq}.json`, JSON.stringify(e.event)]));
      const result = await inner.writeTreeDelta(null, rid, "main", { message: "signals", computeDelta: () => ({ puts }) });
      return { repoId: "dep", ref: "refs/heads/main", commitSha: result.commitSha as string, parentSha: result.parentSha, events };
    },
    async waitDelivered(n) {
      await reports.next((r) => r.type === "delivered", n);
    },
    async close() {
      await dispatcher.stop();
      await inner.close();
    },
  };
}

let r: Rig | null = null;
let s: DispatchSetup | null = null;

afterEach(async () => {
  await r?.close();
  r = null;
  await s?.stopAll();
  s = null;
});

const ids = (delivered: readonly Delivery[]): string[] => delivered.map((d) => `${d.runId}/${d.seq}`);

describe("dispatch: commits handed over by the committer", () => {
  it("takes a handed-over commit's events without reading the log, and reads what was not handed over", async () => {
    r = await rig();
    const first = await r.commit([signal("a", 1)]);
    await r.waitDelivered(1);
    expect(r.opened.has(first.commitSha)).toBe(true);

    const handed = await r.commit([signal("a", 2), signal("b", 1)]);
    r.dispatcher.committed(handed);
    await r.waitDelivered(3);
    const third = await r.commit([signal("b", 2)]);
    await r.waitDelivered(4);

    expect(ids(r.delivered)).toEqual(["a/1", "a/2", "b/1", "b/2"]);
    expect(r.delivered[1]).toMatchObject({ commitSha: handed.commitSha, attempt: 1, idempotencyKey: "dep/a/signal/a-2", event: { type: "SignalReceived", signalId: "a-2" } });
    expect(r.opened.has(handed.commitSha)).toBe(false);
    expect(r.opened.has(third.commitSha)).toBe(true);
    await r.dispatcher.stop();
    expect((await readConsumerState(r.store, null, rid, "c1")).cursor).toBe(third.commitSha);
  });

  it("holds a handover that comes before the commits it follows were read, and keeps each run's events in seq order", async () => {
    r = await rig();
    // Two commits in a row; only the second is handed over, at once, before the lane has read the first.
    const unread = await r.commit([signal("a", 1)]);
    const handed = await r.commit([signal("a", 2), signal("a", 3)]);
    r.dispatcher.committed(handed);
    await r.waitDelivered(3);
    expect(ids(r.delivered)).toEqual(["a/1", "a/2", "a/3"]);
    expect(r.opened.has(unread.commitSha)).toBe(true);
    expect(r.opened.has(handed.commitSha)).toBe(false);
  });

  it("ignores a handover that does not follow the log (wrong parent, other ref, other deployment): the log is read, each event once", async () => {
    r = await rig();
    const c1 = await r.commit([signal("a", 1)]);
    r.dispatcher.committed({ ...c1, parentSha: "0".repeat(40) });
    r.dispatcher.committed({ ...c1, ref: "refs/heads/other" });
    r.dispatcher.committed({ ...c1, repoId: "elsewhere" });
    await r.waitDelivered(1);
    const c2 = await r.commit([signal("a", 2)]);
    await r.waitDelivered(2);
    // Handed over late, after the lane read it: nothing more is delivered.
    r.dispatcher.committed(c2);
    const c3 = await r.commit([signal("a", 3)]);
    r.dispatcher.committed(c3);
    await r.waitDelivered(3);
    await r.dispatcher.stop();
    expect(ids(r.delivered)).toEqual(["a/1", "a/2", "a/3"]);
    expect(r.opened.has(c1.commitSha)).toBe(true);
  });
});

describe("dispatch: the host hands fire commits over", () => {
  it("gives the dispatcher each fire commit with the events it added, as the log holds them, frozen", async () => {
    s = dispatchSetup();
    const host = s.make();
    const handovers: CommittedEvents[] = [];
    const committed = host.dispatcher.committed.bind(host.dispatcher);
    Object.assign(host.dispatcher, {
      committed: (c: CommittedEvents) => {
        handovers.push(c);
        committed(c);
      },
    });
    const delivered: Delivery[] = [];
    host.dispatch({ name: "c1", handler: (d) => void delivered.push(d) });
    await host.start();
    await host.createDeployment("dep");
    await host.runtime("dep").setTimer("r1", { timerId: "t1", delayMs: 10 });
    const before = await host.store.resolveRef(null, rid, "main");
    await s.clock.advance(10);
    await s.reports.next((rep) => rep.type === "delivered");
    const tip = await host.store.resolveRef(null, rid, "main");
    expect(handovers).toHaveLength(1);
    const [handover] = handovers as [CommittedEvents];
    expect(handover).toMatchObject({ repoId: "dep", ref: "refs/heads/main", commitSha: tip, parentSha: before });
    const log = await readRunLog(await host.store.openCommittedReads(null, rid, tip as string), "r1");
    expect(handover.events.map((e) => e.event)).toEqual(log.events.filter((e) => e.seq > 1));
    expect(handover.events.map((e) => [e.runId, e.seq])).toEqual([["r1", 2]]);
    expect(Object.isFrozen(handover.events[0]?.event)).toBe(true);
    expect(delivered.map((d) => [d.event.type, d.commitSha, d.idempotencyKey])).toEqual([["TimerFired", tip, "dep/r1/t1/2026-05-01T10:00:00.010Z"]]);
  });
});
