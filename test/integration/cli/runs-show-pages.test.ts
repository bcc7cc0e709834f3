/**
 * `runs show` on a long run: the summary and one page of events by default, `--after`/`--limit`
 * for the next pages, `--last` for the tail, `--all` for every event (a page at a time), with
 * `--json` one object either way.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { makeTempDir, removeTempDir } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";
import { sharedRunSummaries } from "../../../src/workflow/run-log-summary.js";

const EVENTS = 1_500;
const BAD_SEQ = 700;
const expected = Array.from({ length: EVENTS }, (_, i) => i + 1).filter((s) => s !== BAD_SEQ);

// One deployment for every test of the file (they only read it), removed at the end.
let root = "";
let dataDir = "";
afterAll(() => removeTempDir(root));
beforeAll(async () => {
  root = await makeTempDir("wfh-runs-show-pages-");
  dataDir = join(root, "data");
  const store = openWorkflowStore({ dataDir, watch: false });
  const files: Record<string, string | object> = {};
  for (let seq = 1; seq <= EVENTS; seq += 1) files[`runs/long/events/${seq}.json`] = { seq, type: "StepDone", n: seq };
  files["runs/long/events/1.json"] = { seq: 1, type: "TimerSet", data: { timerId: "later", fireAt: "2099-01-01T00:00:00.000Z" } };
  files[`runs/long/events/${BAD_SEQ}.json`] = '{"type":"TimerSet",}';
  try {
    await buildFixtureRepo(store, "dep", files);
  } finally {
    await store.close();
  }
});

interface Shown {
  eventCount: number;
  events: { seq: number }[];
  nextAfter: number | null;
  badCount: number;
  bad: { seq: number; code: string }[];
  state: { lastSeq: number; pendingTimers: { timerId: string }[] };
}

async function shown(...flags: string[]): Promise<Shown> {
  const out = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long", "--json", ...flags]);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as Shown;
}

describe("runs show on a long run", () => {
  it("prints the summary and the first page, and pages on with --after and --limit", async () => {
    const first = await shown();
    expect([first.eventCount, first.badCount, first.nextAfter, first.state.lastSeq]).toEqual([EVENTS - 1, 1, 100, EVENTS]);
    expect(first.events.map((e) => e.seq)).toEqual(expected.slice(0, 100));
    expect(first.bad.map((b) => [b.seq, b.code])).toEqual([[BAD_SEQ, "event_invalid"]]);
    expect(first.state.pendingTimers.map((t) => t.timerId)).toEqual(["later"]);
    const next = await shown("--after", "100", "--limit", "1000");
    expect([next.events.map((e) => e.seq), next.nextAfter]).toEqual([expected.slice(100, 1099), 1100]);
    const last = await shown("--last", "--limit", "10");
    expect([last.events.map((e) => e.seq), last.nextAfter]).toEqual([expected.slice(-10), null]);
  });

  it("prints every event with --all, as one JSON object", async () => {
    const all = await shown("--all", "--limit", "250");
    expect([all.events.map((e) => e.seq), all.nextAfter, all.eventCount]).toEqual([expected, null, EVENTS - 1]);
  });

  it("says how the next page starts in human output, and prints every event with --all", async () => {
    const out = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long"]);
    expect(out.code, out.stderr).toBe(0);
    const rows = (stdout: string) => stdout.split("\n").filter((line) => /^\s+\d+\s{2}StepDone|^\s+\d+\s{2}TimerSet /.test(line));
    expect(rows(out.stdout)).toHaveLength(100);
    expect(out.stdout).toMatch(/^more events follow: workflow-host runs show -d \S+ -r dep --run long --after 100 \(or --all\)$/m);
    expect(out.stdout).toMatch(/^run long in dep at \w+: 1499 events \(seq 1\.\.1500\)$/m);
    const all = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long", "--all"]);
    expect(rows(all.stdout)).toHaveLength(EVENTS - 1);
    expect(all.stdout).not.toMatch(/more events follow/);
  });

  it("prints an unreadable entry at its seq among the page's events, and one of another page after the events", async () => {
    const seqsOf = (stdout: string) => stdout.split("\n").flatMap((line) => /^\s+(\d+)\s{2}(StepDone|TimerSet|UNREADABLE)\s/.exec(line)?.slice(1, 3).join(" ") ?? []);
    const around = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long", "--after", String(BAD_SEQ - 3), "--limit", "6"]);
    expect(around.code, around.stderr).toBe(0);
    expect(seqsOf(around.stdout)).toEqual([`${BAD_SEQ - 2} StepDone`, `${BAD_SEQ - 1} StepDone`, `${BAD_SEQ} UNREADABLE`, `${BAD_SEQ + 1} StepDone`, `${BAD_SEQ + 2} StepDone`, `${BAD_SEQ + 3} StepDone`]);
    expect(around.stdout.match(/UNREADABLE/g)).toHaveLength(1);
    // Every event with --all: the one line stays at its seq.
    const all = seqsOf((await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long", "--all", "--limit", "250"])).stdout);
    expect(all.map((row) => Number(row.split(" ")[0]))).toEqual(Array.from({ length: EVENTS }, (_, i) => i + 1));
    // The first page does not hold seq 700: its line follows the page, once.
    const first = seqsOf((await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long"])).stdout);
    expect(first.slice(-2)).toEqual(["100 StepDone", `${BAD_SEQ} UNREADABLE`]);
  });

  it("refuses a page out of range or --last with --all (exit 2, usage)", async () => {
    for (const flags of [["--limit", "0"], ["--limit", "abc"], ["--limit", "1001"], ["--after", "-1"], ["--last", "--all"], ["--last", "--after", "3"]]) {
      const out = await runCli(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "long", ...flags]);
      expect([flags.join(" "), out.code, out.stdout]).toEqual([flags.join(" "), 2, ""]);
      expect(out.stderr).toMatch(/usage/);
    }
  });

  it("resumes --all after a seq: --after and --all together print every event above it, as the synopsis says", async () => {
    const help = await runCli(["runs", "show", "--help"]);
    expect(help.stdout).toMatch(/--run X \[--limit N\] \[--after SEQ\] \[--all\]/);
    const rest = await shown("--all", "--after", "1200", "--limit", "75");
    expect([rest.events.map((e) => e.seq), rest.nextAfter]).toEqual([expected.filter((s) => s > 1200), null]);
  });
});

describe("runs show and runs list share the process's summary cache", () => {
  it("keeps the run's summary for the run's view to find, from either command", async () => {
    sharedRunSummaries.clear();
    await shown("--all", "--limit", "500");
    expect(sharedRunSummaries.size).toBe(1);
    sharedRunSummaries.clear();
    const listed = await runCli(["runs", "list", "-d", dataDir, "-r", "dep", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(sharedRunSummaries.size).toBe(1);
    // The view's own summary is that one: nothing new is kept.
    await shown();
    expect(sharedRunSummaries.size).toBe(1);
  });
});
