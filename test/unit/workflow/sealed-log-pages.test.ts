/**
 * Paging a run whose log is only its sealed events.jsonl: the file is one blob, but a page must
 * not parse the whole of it again each time (a 200,000-event sealed run paged 100 at a time
 * would parse it 2,000 times, each a few hundred ms with the event loop held). Each line is
 * counted as parsed: the whole log once (its check), then only each page's own lines.
 */
import { afterEach, describe, expect, it, vi } from "vitest";

const parsed = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../../src/workflow/events.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../../src/workflow/events.js")>();
  return {
    ...actual,
    parseEvent: (...args: Parameters<typeof actual.parseEvent>) => {
      parsed.count += 1;
      return actual.parseEvent(...args);
    },
  };
});

const { DEFAULT_REF } = await import("../../../src/substrate/ref-name.js");
const { buildFixtureRepo } = await import("../../../src/testing/fixture-repo.js");
const { createMemoryRepoStore } = await import("../../../src/testing/memory-store.js");
const { readRunLog, readRunLogPage } = await import("../../../src/workflow/run-log.js");
const { WORKFLOW_RUN_KIND } = await import("../../../src/workflow/workflow-run-kind.js");

const EVENTS = 3_000;
let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

async function sealedRun(lines: readonly string[]) {
  const opened = createMemoryRepoStore();
  close = () => opened.store.close();
  await buildFixtureRepo(opened.store, "dep", { "runs/s/events.jsonl": `${lines.join("\n")}\n` });
  return opened.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id: "dep" }, DEFAULT_REF);
}

const longLog = (first = 1): string[] => {
  const lines: string[] = [];
  for (let seq = first; seq < first + EVENTS - 1; seq += 1) lines.push(JSON.stringify({ seq, type: "StepDone", n: seq }));
  lines.push(JSON.stringify({ seq: first + EVENTS - 1, type: "RunCompleted" }));
  return lines;
};

describe("pages of a sealed log", () => {
  it("parses the log once, then each page's own lines, and pages it as readRunLog reads it", async () => {
    const reads = await sealedRun(longLog());
    const whole = (await readRunLog(reads, "s")).events;
    parsed.count = 0;
    const seen: number[] = [];
    let after: number | null = -1;
    let pages = 0;
    while (after !== null) {
      const page = await readRunLogPage(reads, "s", { after, limit: 100 });
      seen.push(...page.events.map((e) => e.seq));
      after = page.nextAfter;
      pages += 1;
    }
    expect(pages).toBe(EVENTS / 100);
    expect(seen).toEqual(whole.map((e) => e.seq));
    expect(parsed.count).toBeLessThanOrEqual(2 * EVENTS);
  });

  it("starts at seq 0 as at seq 1, and a cursor in the middle, at the end or past it", async () => {
    const reads = await sealedRun(longLog(0));
    expect((await readRunLogPage(reads, "s", { limit: 2 })).events.map((e) => e.seq)).toEqual([0, 1]);
    const middle = await readRunLogPage(reads, "s", { after: 1_499, limit: 3 });
    expect([middle.events.map((e) => e.seq), middle.nextAfter]).toEqual([[1_500, 1_501, 1_502], 1_502]);
    const last = await readRunLogPage(reads, "s", { after: EVENTS - 3, limit: 100 });
    expect([last.events.map((e) => e.seq), last.nextAfter]).toEqual([[EVENTS - 2, EVENTS - 1], null]);
    const past = await readRunLogPage(reads, "s", { after: 1e12 });
    expect([past.events, past.nextAfter]).toEqual([[], null]);
  });

  it("reads an invalid sealed log as empty, every time", async () => {
    const lines = longLog();
    lines[10] = "{ not json";
    const reads = await sealedRun(lines);
    for (const after of [-1, 500]) {
      const page = await readRunLogPage(reads, "s", { after });
      expect([page.events, page.nextAfter]).toEqual([[], null]);
    }
  });
});
