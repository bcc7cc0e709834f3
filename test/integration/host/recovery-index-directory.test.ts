/**
 * The recovery index is derived data: a directory sitting at its path (a mistake, a restore
 * gone wrong) must neither fail a start nor make every start walk every run. The host moves it
 * aside (kept, not deleted), reports that once, writes the index, and the next start uses it.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { RECOVERY_INDEX_FILE } from "../../../src/workflow/recovery-index.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-index-dir-");

describe("a directory at the recovery index path", () => {
  it("is moved aside and reported once; the index is written and the next start finds it", async () => {
    const dataDir = await tempDir();
    const indexPath = join(dataDir, "deployments", "dep.git", "workflow-host", RECOVERY_INDEX_FILE);
    const events: SchedulerEvent[] = [];
    const open = () => createWorkflowHost({ dataDir, watch: false, onEvent: (e) => events.push(e) });

    const first = open();
    await first.start();
    await first.createDeployment("dep");
    await first.runtime("dep").setTimer("r1", { timerId: "t", fireAt: "2099-01-01T00:00:00Z" });
    await first.stop();
    rmSync(indexPath, { force: true });
    mkdirSync(join(indexPath, "inner"), { recursive: true });
    writeFileSync(join(indexPath, "inner", "kept"), "x");

    const second = open();
    await second.start();
    expect(second.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["t"]);
    await second.stop();
    const replaced = events.filter((e): e is Extract<SchedulerEvent, { type: "index_replaced" }> => e.type === "index_replaced");
    expect(replaced).toHaveLength(1);
    expect(statSync(indexPath).isFile()).toBe(true);
    expect(readFileSync(join(replaced[0]?.displacedTo as string, "inner", "kept"), "utf8")).toBe("x");

    const third = open();
    await third.start();
    expect(third.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["t"]);
    await third.stop();
    expect(events.filter((e) => e.type === "index_replaced")).toHaveLength(1);
    expect(existsSync(indexPath)).toBe(true);
  });
});
