/**
 * slotDueMs keeps the last slot it read (a burst's timers share their instant): its answer for a
 * slot must not depend on what it was asked before, for readable and unreadable slots alike.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { slotDueMs } from "../../../src/workflow/schedule/jitter.js";
import type { PendingTimer } from "../../../src/workflow/types.js";

const SLOTS = ["2030-01-01T00:00:00.000Z", "2030-01-01T00:00:00.001Z", "2026-05-01T11:00:00.000Z", "", "not an instant", "2026-05-01T12:00:00.000Z"];
const oneShot = (fireAt: string): PendingTimer => ({ timerId: "t", fireAt, setSeq: 1 });
const series: PendingTimer = { timerId: "s", fireAt: "2026-05-01T11:00:00.000Z", setSeq: 3, cron: "0 * * * *", jitterMs: 600_000 };

describe("slotDueMs", () => {
  it("gives each slot what Date.parse gives it, whatever slot it read before", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...SLOTS), { minLength: 1, maxLength: 30 }), (slots) => {
        for (const slot of slots) expect(slotDueMs("r1", oneShot(slot))).toEqual(Date.parse(slot));
      }),
    );
  });

  it("gives a jittered series' slot the same instant after any other slot was read", () => {
    const slot = "2026-05-01T12:00:00.000Z";
    const first = slotDueMs("r1", series, slot);
    expect(first).toBeGreaterThanOrEqual(Date.parse(slot));
    expect(first).toBeLessThan(Date.parse(slot) + 600_000 + 1);
    for (const other of SLOTS) {
      slotDueMs("r1", oneShot(other));
      expect(slotDueMs("r1", series, slot)).toBe(first);
    }
  });
});
