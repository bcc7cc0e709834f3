/**
 * The README's "Schedules" section: every event it shows is one the log accepts, the declared
 * set parses, and each control has its command line.
 */
import { describe, expect, it } from "vitest";
import { validateEvent } from "../../../src/workflow/events.js";
import { parseDeclaredSchedules } from "../../../src/workflow/schedule/sync-plan.js";
import { readmeCodeBlocks } from "../../helpers/readme-blocks.js";

describe("README Schedules section", () => {
  it("shows only events that validate, a declared set that parses, and a command line per control", () => {
    const lines = readmeCodeBlocks("Schedules", "json").flatMap((b) => b.split("\n").filter((l) => l.trim() !== ""));
    const events = lines.filter((l) => l.startsWith("{"));
    const sets = lines.filter((l) => l.startsWith("["));
    expect(events.length).toBeGreaterThanOrEqual(9);
    for (const line of events) expect(() => validateEvent(JSON.parse(line))).not.toThrow();
    const types = new Set(events.map((l) => (JSON.parse(l) as { type: string }).type));
    for (const t of ["SchedulePaused", "ScheduleResumed", "TimerSkipped", "TimerFired", "ScheduleEnded", "TimerSet", "TimerCancelled"]) expect(types).toContain(t);
    expect(sets).toHaveLength(1);
    expect(parseDeclaredSchedules(JSON.parse(sets[0] as string))).toHaveLength(1);
    const sh = readmeCodeBlocks("Schedules", "sh").join("\n");
    for (const verb of ["pause", "resume", "trigger", "preview", "describe", "backfill", "sync"]) expect(sh).toContain(`workflow-host schedule ${verb} `);
  });
});
