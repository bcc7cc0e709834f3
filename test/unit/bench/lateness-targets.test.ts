/**
 * What the full lateness section judges: the targets at 1,000 fires/s on the
 * 10,000-run deployment at both durabilities (p99 < 20 ms without fsync, < 50 ms with it),
 * beside the 500/s rows of earlier runs and their target.
 */
import { describe, expect, it } from "vitest";
import { LATENESS_SHAPES, type Lateness, latenessTargetNotes, latenessTargets, QUICK_SHAPES, rateOf } from "../../../bench/lateness.js";
import type { Durability } from "../../../bench/scheduler-rig.js";

const figures = (p99: number): Lateness => ({ p50: p99 / 2, p99, max: p99 * 2, unfinished: 0 });

describe("lateness section targets", () => {
  it("measure 1,000 fires/s on 10,000 runs at both durabilities, each with the issue's limit", () => {
    const fast = LATENESS_SHAPES.filter((s) => rateOf(s) === 1_000 && s.runs === 10_000);
    expect(fast).toHaveLength(1);
    expect(fast[0]?.p99TargetMs).toEqual({ none: 20, fsync: 50 });
  });

  it("keep the 500 fires/s rows and their fsync target", () => {
    const slow = LATENESS_SHAPES.filter((s) => rateOf(s) === 500 && s.runs === 10_000);
    expect(slow.map((s) => [s.timers, s.windowMs, s.p99TargetMs])).toEqual([[5_000, 10_000, { fsync: 50 }]]);
  });

  it("judge each durability's p99 against its own limit", () => {
    const shape = LATENESS_SHAPES.find((s) => rateOf(s) === 1_000);
    if (shape === undefined) throw new Error("no 1,000/s shape");
    const chosen = new Map<Durability, Lateness>([
      ["fsync", figures(45)],
      ["none", figures(21)],
    ]);
    expect(latenessTargets(shape, chosen).map((t) => [t.target, t.verdict])).toEqual([
      ["p99 lateness < 50 ms at 1,000 fires/s (fsync)", "met"],
      ["p99 lateness < 20 ms at 1,000 fires/s (none)", "missed"],
    ]);
  });

  it("judge a durability with a limit but no figure invalid, never met", () => {
    const shape = LATENESS_SHAPES.find((s) => rateOf(s) === 1_000);
    if (shape === undefined) throw new Error("no 1,000/s shape");
    const verdicts = latenessTargets(shape, new Map([["fsync", figures(10)]])).map((t) => t.verdict);
    expect(verdicts).toEqual(["met", "invalid"]);
  });
});

describe("lateness section at --quick sizes", () => {
  it("runs the full run's rates, 1,000 fires/s included, each with the full run's limits", () => {
    expect(QUICK_SHAPES.map((s) => [rateOf(s), s.p99TargetMs])).toEqual(LATENESS_SHAPES.map((s) => [rateOf(s), s.p99TargetMs]));
  });

  it("prints each target beside the try's p99, marked as not judged", () => {
    const shape = QUICK_SHAPES.find((s) => rateOf(s) === 1_000);
    if (shape === undefined) throw new Error("no 1,000/s quick shape");
    const notes = latenessTargetNotes(shape, new Map<Durability, Lateness>([["fsync", figures(45)], ["none", figures(21)]]));
    expect(notes).toEqual([
      "target p99 lateness < 50 ms at 1,000 fires/s (fsync): p99 45 ms (not judged: --quick sizes)",
      "target p99 lateness < 20 ms at 1,000 fires/s (none): p99 21 ms (not judged: --quick sizes)",
    ]);
  });
});
