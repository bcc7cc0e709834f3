/**
 * A damaged archive ref (refs/archive/runs, where retention moves ended runs) costs the host the
 * archived runs, not the live ones: it is reported once per damage seen (`archive_unreadable`,
 * the store's `ref_corrupt` as error), the deployment recovers and its live timers fire.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createHarness, firedOf, until, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ARCHIVE_FILE = "/data/deployments/dep.git/refs/archive/runs";

function archiveReports(events: readonly SchedulerEvent[]): { code: string | undefined }[] {
  return events.flatMap((e) => (e.type === "archive_unreadable" ? [{ code: (e.error as { code?: string }).code }] : []));
}

describe("a damaged refs/archive/runs", () => {
  it("is reported once per damage, and the live runs are recovered, tailed and fired", async () => {
    h = await createHarness("2026-05-01T10:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T10:00:01.000Z" } });
    await h.writeFile(ARCHIVE_FILE, "garbage\n");
    await h.scheduler.start();
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1"), "a")).toHaveLength(1);
    expect(h.events.filter((e) => e.type === "repo_failed")).toEqual([]);
    expect(archiveReports(h.events)).toEqual([{ code: "ref_corrupt" }]);

    // A new run pushed by another process (the tail looks its id up in the archive) finds the
    // same damage: not reported again.
    await h.rawDelta({ "runs/r2/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "b", fireAt: "2026-05-01T10:00:03.000Z" } }) });
    await until(() => h?.scheduler.queuedTimers().some((t) => t.timerId === "b") === true, "b queued");
    await h.clock.advance(2_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r2"), "b")).toHaveLength(1);
    expect(archiveReports(h.events)).toHaveLength(1);

    // Damaged differently: a new report.
    await h.writeFile(ARCHIVE_FILE, "0123456789abcdef0123456789abcdef01234567\n");
    await h.rawDelta({ "runs/r3/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "c", fireAt: "2026-05-01T10:00:05.000Z" } }) });
    await until(() => h?.scheduler.queuedTimers().some((t) => t.timerId === "c") === true, "c queued");
    await h.clock.advance(2_000);
    await h.scheduler.idle();

    expect(firedOf(await h.log("r3"), "c")).toHaveLength(1);
    expect(archiveReports(h.events)).toEqual([{ code: "ref_corrupt" }, { code: "ref_corrupt" }]);
    expect(h.events.filter((e) => e.type === "repo_failed")).toEqual([]);
  });
});
