import { describe, expect, it } from "vitest";
import { CONSUMER_FILE, type ConsumerFile } from "../../../seams/dispatch/consumer-state.js";
import { createCommitWindow } from "../../../seams/dispatch/consumer-window.js";
import { consumerRef } from "../../../seams/dispatch/dispatch-keys.js";
import { createDispatcher } from "../../../seams/dispatch/dispatcher.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createMemFs } from "../../helpers/memfs.js";
import { createReportLog } from "./dispatch-harness.js";

const rid = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const signal = (r: string): string => JSON.stringify({ seq: 1, type: "SignalReceived", signalName: "go", signalId: `s-${r}`, payload: null, at: "2026-05-01T10:00:00.000Z" });

describe("dispatch checkpoints after a restart", () => {
  it("keeps every event the durable state recorded as done in each checkpoint, also before the reader reaches its commit again", async () => {
    const fs = createMemFs();
    const clock = createFakeClock("2026-05-01T10:00:00.000Z");
    const store = openWorkflowStore({ dataDir: "/data", fs, watch: false, clock: clock.clock });
    await store.initRepo(null, rid);
    // Two commits of main: r1's event, then r2's event, which an earlier life already handled
    // out of commit order (in `done`, the cursor still before both).
    await store.writeTree(null, rid, "main", { files: new Map([["runs/r1/events/1.json", signal("r1")]]), message: "r1" });
    const second = await store.writeTree(null, rid, "main", { files: new Map([["runs/r1/events/1.json", signal("r1")], ["runs/r2/events/1.json", signal("r2")]]), message: "r2" });
    const ref = consumerRef("c1");
    const earlier: ConsumerFile = { version: 1, consumer: "c1", cursor: null, done: ["r2/1"], updatedAt: "2026-05-01T09:59:00.000Z" };
    await store.writeTreeDelta(null, rid, ref, { message: "an earlier life", computeDelta: () => ({ puts: new Map([[CONSUMER_FILE, `${JSON.stringify(earlier)}\n`]]) }) });
    const before = await store.resolveRef(null, rid, ref);

    // One buffered event: r1's is handled (and checkpointed) while the reader waits before r2's commit.
    const reports = createReportLog();
    const handed: string[] = [];
    const dispatcher = createDispatcher({ repoStore: store, principal: null, listDeployments: async () => ["dep"], clock: clock.clock, timers: clock.timers, onEvent: (r) => reports.push(r), maxBuffered: 1 });
    dispatcher.add({ name: "c1", handler: (d) => void handed.push(`${d.runId}/${d.seq}`) });
    await dispatcher.start();
    await reports.next((r) => r.type === "delivered");
    await dispatcher.stop();
    expect(handed).toEqual(["r1/1"]);

    // Every checkpoint written since is a state a kill could leave: each must still record r2/1
    // as done (in `done`, or the cursor at r2's commit).
    const checkpoints: ConsumerFile[] = [];
    const tip = await store.resolveRef(null, rid, ref);
    const controller = new AbortController();
    for await (const commit of store.subscribe(null, rid, ref, { from: before as string, signal: controller.signal })) {
      const reads = await store.openCommittedReads(null, rid, commit.commitSha);
      checkpoints.push(JSON.parse(new TextDecoder().decode((await reads.readBlob(CONSUMER_FILE)) ?? new Uint8Array())) as ConsumerFile);
      if (commit.commitSha === tip) controller.abort();
    }
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const file of checkpoints) expect(file.cursor === second.commitSha || file.done.includes("r2/1"), JSON.stringify(file)).toBe(true);
    await store.close();
  });

  it("drops a durable done id only once the cursor passes its commit, also when the lane no longer takes that event's run", () => {
    const window = createCommitWindow("c0", new Set(["r1/1", "r2/1"]), () => {});
    expect(window.done()).toEqual(["r1/1", "r2/1"]);
    const first = window.entryFor("c1");
    expect(window.admit(first, "r1/1")).toBe(false);
    window.pass(first, "r2/1");
    expect(window.done()).toEqual(["r1/1", "r2/1"]);
    window.close(first);
    expect(window.cursor).toBe("c1");
    expect(window.done()).toEqual([]);
  });
});
