/**
 * `timers --limit N --after CURSOR` pages the pending timers in the listing's order (fireAt, then
 * repo, run and timer id): the pages put together, whatever their size, are the whole listing,
 * each timer once; `--json` says where the next page starts (`nextAfter`, null after the last)
 * and the human output prints the next page's command; the summary counts every timer. Bad
 * values are flag errors (exit 2), as `runs list`'s are.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listPendingTimers } from "../../../src/host/list-pending-timers.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { seededRandom } from "../../helpers/seeded-random.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-cli-timers-pages-");
const clock = (): Date => new Date("2026-05-01T10:00:00.000Z");

interface Listed {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  readonly fireAt: string;
}
interface TimersJson {
  readonly timers: Listed[];
  readonly pendingTimers: number;
  readonly nextAfter: string | null;
  readonly runs: number;
  readonly repos: number;
}

const keyOf = (t: Listed): string => `${t.repoId}/${t.runId}/${t.timerId}@${t.fireAt}`;

/**
 * Two deployments of several runs with several timers each, seeded: fireAt drawn from four
 * instants (ties across deployments, runs and timers of one run), one ended run whose timers are
 * not pending. Returns the data dir and how many timers are pending.
 */
async function generatedDeployment(seed: number): Promise<{ dataDir: string; pending: number }> {
  const dataDir = join(await tempDir(), "data");
  const random = seededRandom(seed);
  const store = openWorkflowStore({ dataDir, watch: false });
  let pending = 0;
  try {
    for (const repoId of ["billing", "shipping"]) {
      await store.initRepo(null, { kind: "workflow-run", id: repoId });
      const runs = 2 + Math.floor(random() * 3);
      for (let r = 0; r < runs; r++) {
        const runId = `run-${r}`;
        const count = 1 + Math.floor(random() * 4);
        const append: { type: string; data?: Record<string, unknown>; at?: string }[] = [{ type: "RunStarted" }];
        for (let t = 0; t < count; t++) append.push({ type: "TimerSet", data: { timerId: `t-${t}`, fireAt: new Date(Date.UTC(2026, 4, 2 + Math.floor(random() * 4))).toISOString() } });
        pending += count;
        await appendRunEvents({ store, principal: null, repoId, runId, message: `run ${runId}`, decide: () => ({ append, result: undefined }) });
      }
    }
    // An ended run's timers are disarmed: never listed, never counted.
    await appendRunEvents({
      store,
      principal: null,
      repoId: "billing",
      runId: "ended",
      message: "ended run",
      decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "gone", fireAt: "2026-05-02T00:00:00.000Z" } }, { type: "RunCompleted", at: "2026-05-01T00:00:00.000Z" }], result: undefined }),
    });
  } finally {
    await store.close();
  }
  return { dataDir, pending };
}

async function timersJson(args: readonly string[]): Promise<TimersJson> {
  const run = await runCli(["timers", ...args, "--json"], { clock });
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as TimersJson;
}

describe("timers in pages", () => {
  it.each([11, 12])("pages of 1..5 timers (and --repo) put together are the whole listing, each timer once (seed %i)", async (seed) => {
    const { dataDir, pending } = await generatedDeployment(seed);
    const whole = await timersJson(["-d", dataDir]);
    expect(whole.timers).toHaveLength(pending);
    expect(whole).toMatchObject({ pendingTimers: pending, nextAfter: null, repos: 2 });
    // The listing's order: fireAt, then repo, run and timer id.
    const sortKey = (t: Listed): string => `${t.fireAt}\u0000${t.repoId}\u0000${t.runId}\u0000${t.timerId}`;
    expect(whole.timers.map(sortKey)).toEqual(whole.timers.map(sortKey).sort());
    for (const scope of [[], ["--repo", "shipping"]]) {
      const expected = whole.timers.filter((t) => scope.length === 0 || t.repoId === scope[1]).map(keyOf);
      for (let limit = 1; limit <= 5; limit++) {
        const listed: string[] = [];
        let after: string | null = null;
        let pages = 0;
        do {
          const page: TimersJson = await timersJson(["-d", dataDir, ...scope, "--limit", String(limit), ...(after === null ? [] : ["--after", after])]);
          expect(page.timers.length).toBeLessThanOrEqual(limit);
          // Every page counts every timer, not only its own.
          expect(page.pendingTimers).toBe(expected.length);
          listed.push(...page.timers.map(keyOf));
          after = page.nextAfter;
          pages += 1;
        } while (after !== null && pages < 100);
        expect({ limit, scope, listed }).toEqual({ limit, scope, listed: expected });
        expect(new Set(listed).size).toBe(listed.length);
        expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      }
    }
  }, 120_000);

  it("human output: a partial page says 'showing N of M' and prints the next page's command, which runs as printed", async () => {
    const { dataDir, pending } = await generatedDeployment(7);
    const whole = await timersJson(["-d", dataDir]);
    const HINT = /^more timers follow: workflow-host (.*)$/m;
    let args: string[] | null = ["timers", "-d", dataDir, "--limit", "3"];
    const rows: string[] = [];
    let pages = 0;
    while (args !== null && pages < 100) {
      const run = await runCli(args, { clock });
      expect(run.code, run.stderr).toBe(0);
      pages += 1;
      const lines = run.stdout.split("\n");
      rows.push(...lines.filter((line) => /^(billing|shipping) /.test(line)).map((line) => line.split(/\s+/).slice(0, 3).join("/")));
      const hint = HINT.exec(run.stdout);
      if (hint !== null) expect(run.stdout).toMatch(new RegExp(`^showing 3 of ${pending} pending timers in 2 deployments, \\d+ runs$`, "m"));
      else expect(run.stdout).toMatch(new RegExp(`^showing ${pending - 3 * (pages - 1)} of ${pending} pending timers in 2 deployments`, "m"));
      // The paths here need no quoting, so the printed command splits on spaces.
      args = hint === null ? null : (hint[1] as string).split(" ");
    }
    expect(rows).toEqual(whole.timers.map((t) => `${t.repoId}/${t.runId}/${t.timerId}`));
    // A whole listing says nothing about pages.
    const all = await runCli(["timers", "-d", dataDir], { clock });
    expect(all.stdout).toMatch(new RegExp(`^${pending} pending timers in 2 deployments`, "m"));
    expect(all.stdout).not.toMatch(/more timers follow|showing/);
  }, 60_000);

  it("a cursor past the last timer is an empty last page that still counts every timer", async () => {
    const { dataDir, pending } = await generatedDeployment(3);
    const whole = await timersJson(["-d", dataDir]);
    const last = await timersJson(["-d", dataDir, "--limit", String(pending - 1)]);
    const tail = await timersJson(["-d", dataDir, "--after", last.nextAfter as string]);
    expect(tail.timers.map(keyOf)).toEqual([keyOf(whole.timers.at(-1) as Listed)]);
    expect(tail.nextAfter).toBeNull();
    const past = await runCli(["timers", "-d", dataDir, "--limit", "2", "--after", encodeAfter(whole.timers.at(-1) as Listed)], { clock });
    expect(past.code).toBe(0);
    expect(past.stdout).toMatch(new RegExp(`^no pending timers after the cursor \\(${pending} pending timers in 2 deployments, \\d+ runs\\)$`, "m"));
    const pastJson = await timersJson(["-d", dataDir, "--after", encodeAfter(whole.timers.at(-1) as Listed)]);
    expect(pastJson).toMatchObject({ timers: [], nextAfter: null, pendingTimers: pending });
  }, 60_000);

  it("refuses --limit 0, abc, over the max and a malformed --after: a flag error, exit 2", async () => {
    const { dataDir } = await generatedDeployment(5);
    const cases: [string[], RegExp][] = [
      [["--limit", "0"], /^workflow-host: usage: --limit "0" is not an integer in 1\.\.10000000; see workflow-host timers --help$/m],
      [["--limit", "abc"], /^workflow-host: usage: --limit "abc" is not an integer in 1\.\.10000000/m],
      [["--limit", "10000001"], /^workflow-host: usage: --limit "10000001" is not an integer in 1\.\.10000000/m],
      [["--after", "not a cursor"], /^workflow-host: page_invalid: --after "not a cursor" is not valid; allowed: the nextAfter of an earlier page; see workflow-host timers --help$/m],
      [["--after", Buffer.from("[1,2]").toString("base64url")], /page_invalid: --after /m],
      [["--after", ""], /page_invalid: --after "" is not valid/m],
    ];
    for (const [flags, message] of cases) {
      const run = await runCli(["timers", "-d", dataDir, ...flags], { clock });
      expect({ flags, code: run.code, stdout: run.stdout }).toEqual({ flags, code: 2, stdout: "" });
      expect(run.stderr).toMatch(message);
    }
  }, 60_000);

  it("listPendingTimers refuses a limit that is not a whole number >= 1 before it reads: page_invalid", async () => {
    const { dataDir } = await generatedDeployment(5);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      for (const limit of [0, -1, 1.5, Number.NaN]) await expect(listPendingTimers(store, { clock, limit })).rejects.toMatchObject({ code: "page_invalid" });
      const page = await listPendingTimers(store, { clock, limit: 2 });
      expect(page.timers).toHaveLength(2);
      expect(page.nextAfter).toMatchObject({ repoId: page.timers[1]?.repoId, runId: page.timers[1]?.runId, timerId: page.timers[1]?.timerId });
    } finally {
      await store.close();
    }
  }, 60_000);

  it("documents --limit and --after with an example", async () => {
    const help = (await runCli(["timers", "--help"])).stdout;
    expect(help).toMatch(/^Usage: workflow-host timers --data-dir DIR \[--repo R\] \[--limit N\] \[--after CURSOR\] \[--json\]$/m);
    expect(help).toMatch(/^ {6}--limit N {8}list at most N timers \(1\.\.10,000,000\)$/m);
    expect(help).toMatch(/^ {6}--after CURSOR {3}/m);
    expect(help).toMatch(/nextAfter/);
    expect(help).toMatch(/^ {2}workflow-host timers --data-dir \.\/data --limit 500 --after /m);
  });
});

/** The cursor of the page after `t`, as `nextAfter` gives it (base64url JSON of [fireAtMs, repo, run, timer]). */
function encodeAfter(t: Listed): string {
  return Buffer.from(JSON.stringify([Date.parse(t.fireAt), t.repoId, t.runId, t.timerId])).toString("base64url");
}
