/**
 * `runs list` pages read by a person: the "more runs follow" line is a command that runs as
 * printed and lists the next page (it printed `-d …` and dropped `--limit`), and a page past
 * the last run says it is past the cursor rather than that the deployment holds no runs.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-runs-pages-");
const REPO = "pages";
const HINT = /^more runs follow: workflow-host (.*)$/m;

/** Follows the printed hints from `first` to the last page; returns every run id listed. */
async function followPages(first: string[]): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let args: string[] | null = first;
  let pages = 0;
  while (args !== null && pages < 20) {
    const out = await runCli(args);
    expect(out.code, out.stderr).toBe(0);
    pages += 1;
    const rows = out.stdout.split("\n").filter((line) => /^\S+\s+-?\d+\s/.test(line) && !line.startsWith("RUN "));
    ids.push(...rows.map((line) => line.split(/\s+/)[0] as string));
    const hint = HINT.exec(out.stdout);
    // The paths here need no quoting, so the printed command splits on spaces.
    args = hint === null ? null : (hint[1] as string).split(" ");
  }
  return { ids, pages };
}

describe("runs list pages in human output", () => {
  it("prints a next-page command that runs as printed, with the page size, for main and for the archive", async () => {
    const dataDir = join(await tempDir(), "data");
    const store = openWorkflowStore({ dataDir, watch: false });
    const ended = ["e1", "e2", "e3", "e4", "e5"];
    const live = ["l1", "l2", "l3", "l4", "l5"];
    try {
      await store.initRepo(null, { kind: "workflow-run", id: REPO });
      for (const runId of [...ended, ...live]) {
        const append = runId.startsWith("e") ? [{ type: "RunStarted" }, { type: "RunCompleted", at: "2020-01-01T00:00:00.000Z" }] : [{ type: "RunStarted" }];
        await appendRunEvents({ store, principal: null, repoId: REPO, runId, message: `run ${runId}`, decide: () => ({ append, result: undefined }) });
      }
      expect((await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: Date.now(), endedRunsAfterMs: 1_000 })).archived).toHaveLength(5);
    } finally {
      await store.close();
    }
    expect(await followPages(["runs", "list", "-d", dataDir, "-r", REPO, "--limit", "2"])).toEqual({ ids: live, pages: 3 });
    expect(await followPages(["runs", "list", "-d", dataDir, "-r", REPO, "--archived", "--limit", "2"])).toEqual({ ids: ended, pages: 3 });

    const past = await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--archived", "--after", "e5"]);
    expect(past.code).toBe(0);
    expect(past.stdout).toMatch(/^no archived runs after e5 in pages /m);
    const livePast = await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--after", "zz"]);
    expect(livePast.stdout).toMatch(/^no runs after zz in pages /m);
    // The count of archived runs under a live listing names a command that lists them.
    const hint = /\(list them with workflow-host (.*)\)$/m.exec((await runCli(["runs", "list", "-d", dataDir, "-r", REPO])).stdout);
    expect(hint).not.toBeNull();
    expect((await followPages((hint?.[1] as string).split(" "))).ids).toEqual(ended);
  });
});
