import { afterEach, describe, expect, it, vi } from "vitest";
import { createSystemTimers, MAX_TIMEOUT_MS, safeDelayMs, systemClock, systemTimers } from "../../../src/time/clock.js";
import { createTimerQueue } from "../../../src/time/timer-queue.js";

describe("safeDelayMs", () => {
  it("turns NaN and negative delays into 0", () => {
    expect(safeDelayMs(Number.NaN)).toBe(0);
    expect(safeDelayMs(-1)).toBe(0);
    expect(safeDelayMs(Number.NEGATIVE_INFINITY)).toBe(0);
    expect(safeDelayMs(-0)).toBe(0);
  });

  it("caps long and infinite delays", () => {
    expect(safeDelayMs(2 ** 31)).toBe(MAX_TIMEOUT_MS);
    expect(safeDelayMs(Number.POSITIVE_INFINITY)).toBe(MAX_TIMEOUT_MS);
    expect(safeDelayMs(45_000, 30_000)).toBe(30_000);
    expect(safeDelayMs(1e20, 30_000)).toBe(30_000);
  });

  it("keeps in-range delays and rounds fractions up, never down", () => {
    expect(safeDelayMs(1234)).toBe(1234);
    expect(safeDelayMs(0.2)).toBe(1);
    expect(safeDelayMs(29_999.5, 30_000)).toBe(30_000);
    expect(safeDelayMs(MAX_TIMEOUT_MS)).toBe(MAX_TIMEOUT_MS);
  });

  it("clamps a nonsensical cap into the range node accepts", () => {
    expect(safeDelayMs(5, Number.NaN)).toBe(5);
    expect(safeDelayMs(2 ** 40, 2 ** 40)).toBe(MAX_TIMEOUT_MS);
    expect(safeDelayMs(5, -3)).toBe(0);
  });
});

describe("systemClock", () => {
  it("returns a fresh Date each call", () => {
    const a = systemClock();
    const b = systemClock();
    expect(a).toBeInstanceOf(Date);
    expect(a).not.toBe(b);
  });
});

describe("systemTimers", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("never hands node a NaN, negative or overflowing delay and emits no TimeoutOverflowWarning", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning);
    };
    process.on("warning", onWarning);
    const spy = vi.spyOn(globalThis, "setTimeout");
    try {
      for (const timers of [systemTimers, createSystemTimers({ unref: true })]) {
        for (const delayMs of [Number.NaN, -5, 2 ** 31, 2 ** 40, Number.POSITIVE_INFINITY, 10]) {
          timers.clearTimeout(timers.setTimeout(() => undefined, delayMs));
        }
      }
      // A queue on the real timers with a fire time decades away, stopped at once.
      const queue = createTimerQueue<undefined>({
        clock: systemClock,
        timers: createSystemTimers({ unref: true }),
        onDue: () => undefined,
      });
      queue.schedule("t-far", Date.parse("2100-01-01T00:00:00Z"), undefined);
      await queue.stop();
      const delays = spy.mock.calls.map((call) => call[1]);
      expect(delays.length).toBeGreaterThanOrEqual(13);
      for (const delay of delays) {
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(MAX_TIMEOUT_MS);
      }
      expect(delays.at(-1)).toBe(30_000);
    } finally {
      spy.mockRestore();
    }
    // Node emits process warnings on a later tick; let them arrive before looking.
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setImmediate(resolve));
    process.off("warning", onWarning);
    expect(warnings.map((warning) => warning.name)).not.toContain("TimeoutOverflowWarning");
    expect(warnings).toEqual([]);
  });

  it("unrefs its timers only when asked", () => {
    const plain = systemTimers.setTimeout(() => undefined, 1000) as NodeJS.Timeout;
    const unrefd = createSystemTimers({ unref: true }).setTimeout(() => undefined, 1000) as NodeJS.Timeout;
    try {
      expect(plain.hasRef()).toBe(true);
      expect(unrefd.hasRef()).toBe(false);
    } finally {
      systemTimers.clearTimeout(plain);
      systemTimers.clearTimeout(unrefd);
    }
  });

  it("ignores foreign handles on clearTimeout", () => {
    expect(() => {
      systemTimers.clearTimeout(undefined);
      systemTimers.clearTimeout(42);
      systemTimers.clearTimeout({});
    }).not.toThrow();
  });
});
