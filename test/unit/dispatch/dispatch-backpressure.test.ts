import { describe, expect, it } from "vitest";
import { createDispatcher } from "../../../seams/dispatch/dispatcher.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createMemFs } from "../../helpers/memfs.js";
import { createReportLog } from "./dispatch-harness.js";

const rid = { kind: WORKFLOW_RUN_KIND, id: "dep" };

describe("dispatch back-pressure", () => {
  it("starts no new attempt while maxUnrecorded handled events wait for their checkpoint, and resumes once it is committed", async () => {
    const fs = createMemFs();
    const clock = createFakeClock("2026-05-01T10:00:00.000Z");
    const inner = openWorkflowStore({ dataDir: "/data", fs, watch: false, clock: clock.clock });
    await inner.initRepo(null, rid);
    const puts = new Map<string, string>();
    for (let r = 0; r < 60; r++) puts.set(`runs/r${r}/events/1.json`, JSON.stringify({ seq: 1, type: "SignalReceived", signalName: "go", signalId: `s-${r}`, payload: null, at: "2026-05-01T10:00:00.000Z" }));
    await inner.writeTree(null, rid, "main", { files: puts, message: "signals" });

    // Checkpoints hang until `open()`; the first (creating the consumer ref) goes through.
    let held = false;
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    let checkpoints = 0;
    const store: RepoStore = Object.create(inner) as RepoStore;
    Object.assign(store, {
      writeTreeDelta: async (...args: Parameters<RepoStore["writeTreeDelta"]>) => {
        if (args[2].startsWith("refs/consumers/") && args[3].message.endsWith("checkpoint")) {
          checkpoints += 1;
          held = true;
          await gate;
        }
        return inner.writeTreeDelta(...args);
      },
    });

    const reports = createReportLog();
    let handed = 0;
    const dispatcher = createDispatcher({ repoStore: store, principal: null, listDeployments: async () => ["dep"], clock: clock.clock, timers: clock.timers, onEvent: (r) => reports.push(r) });
    const cap = 16;
    dispatcher.add({ name: "c1", concurrency: 4, maxUnrecorded: cap, handler: () => void (handed += 1) });
    await dispatcher.start();
    await reports.next((r) => r.type === "delivered", cap);
    // Let everything that could still start do so.
    for (let i = 0; i < 200; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(held).toBe(true);
    // Attempts in flight when the cap was reached may still finish: at most concurrency - 1 more.
    expect(handed).toBeGreaterThanOrEqual(cap);
    expect(handed).toBeLessThan(cap + 4);
    open();
    await reports.next((r) => r.type === "delivered", 60);
    expect(handed).toBe(60);
    expect(checkpoints).toBeGreaterThan(1);
    await dispatcher.stop();
    await inner.close();
  });
});
