/**
 * Ending runs from the CLI and retention on real disk, with the real `git` CLI checking what
 * was written (issue 16): `runs complete|fail|cancel` end runs; a retention pass moves ended
 * runs, including a run of the original layout sealed by the original system, to
 * refs/archive/runs; `git` reads every archived file byte for byte as it was on main, `runs
 * show` gives the same log before and after, `git fsck --strict` is clean, and an archived id
 * cannot start again.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { archiveEndedRuns } from "../../../src/host/archive-ended-runs.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf } from "../reliability/cli-in-process.js";
import { runCli, runCliJson } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-retention-");
const FIXTURE = fileURLToPath(new URL("../../../fixtures/original-layout/", import.meta.url));
const REPO = "legacy";

const json = runCliJson;

interface Shown {
  archived: string | null;
  events: unknown[];
  problems: unknown[];
  state: unknown;
}

/** Every file under `runs/<runId>/` at `rev`, path → bytes as git prints them. */
async function gitFiles(gitdir: string, rev: string, runId: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const listing = await gitAt(gitdir, ["ls-tree", "-r", "--full-tree", rev, `runs/${runId}/`]);
  for (const line of listing.split("\n").filter((l) => l !== "")) {
    const path = line.slice(line.indexOf("\t") + 1);
    out.set(path, await gitAt(gitdir, ["cat-file", "blob", `${rev}:${path}`]));
  }
  return out;
}

describe("ending runs and retention on real disk", () => {
  it("archives ended runs byte for byte where plain git and runs show read them, and refuses their ids afterwards", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    let store = openWorkflowStore({ dataDir, watch: false });
    try {
      await buildFixtureRepo(store, REPO, FIXTURE);
      for (const runId of ["a", "b", "c", "live"]) {
        await appendRunEvents({ store, principal: null, repoId: REPO, runId, message: `start ${runId}`, decide: () => ({ append: [{ type: "RunStarted", data: { text: "naïve\u2028" } }], result: undefined }) });
      }
    } finally {
      await store.close();
    }
    expect((await json<{ type: string; committed: boolean }>(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "a", "--data", '{"result":1}'])).body).toMatchObject({ type: "RunCompleted", committed: true });
    expect((await json<{ type: string }>(["runs", "fail", "-d", dataDir, "-r", REPO, "--run", "b"])).body.type).toBe("RunFailed");
    expect((await json<{ type: string }>(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "c"])).body.type).toBe("RunCancelled");
    expect((await json<{ committed: boolean }>(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "c"])).body.committed).toBe(false);
    expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "c"])).code).toBe(1);
    expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "a", "--data", "[1]"])).code).toBe(2);
    // A run with no events is not started by its end.
    const missing = await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "never-existed"]);
    expect({ code: missing.code, error: errorCodeOf(missing.stderr) }).toEqual({ code: 1, error: "run_not_found" });
    expect(await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/never-existed"])).toBe("");

    const ended = ["a", "b", "c", "sealed-1"];
    const before = new Map<string, { files: Map<string, string>; shown: Shown }>();
    for (const runId of ended) {
      before.set(runId, { files: await gitFiles(gitdir, "main", runId), shown: (await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", runId])).body });
    }

    store = openWorkflowStore({ dataDir, watch: false });
    try {
      const pass = await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: Date.now() + 60_000, endedRunsAfterMs: 1_000 });
      expect([...pass.archived]).toEqual(ended);
    } finally {
      await store.close();
    }

    expect(await gitAt(gitdir, ["ls-tree", "--name-only", "main", "runs/"])).toBe("runs/live-2\nruns/live\nruns/pending-3\n");
    for (const runId of ended) {
      const was = before.get(runId);
      expect(await gitFiles(gitdir, "refs/archive/runs", runId)).toEqual(was?.files);
      const shown = (await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", runId])).body;
      expect(shown.archived).toBe("refs/archive/runs");
      expect(shown.events).toEqual(was?.shown.events);
      expect(shown.state).toEqual(was?.shown.state);
    }
    await gitAt(gitdir, ["fsck", "--strict"]);
    const check = await json<{ problems: unknown[] }>(["check", "-d", dataDir]);
    expect(check.body.problems).toEqual([]);
    expect((await runCli(["runs", "cancel", "-d", dataDir, "-r", REPO, "--run", "a"])).code).toBe(1);
    expect((await runCli(["signal", "send", "-d", dataDir, "-r", REPO, "--run", "b", "--name", "go", "--payload", "{}"])).code).toBe(1);
  });

  it("lists archived runs a page at a time (--limit, --after, nextAfter), by run id, each once", async () => {
    const dataDir = join(await tempDir(), "data");
    const store = openWorkflowStore({ dataDir, watch: false });
    // "a-b/" sorts before "a/" in a git tree; pages follow the run ids' own order.
    const ids = ["a", "a-b", "b", "c_1", "c", "live"];
    try {
      await store.initRepo(null, { kind: "workflow-run", id: REPO });
      for (const runId of ids) {
        const append = runId === "live" ? [{ type: "RunStarted" }] : [{ type: "RunStarted" }, { type: "RunCompleted", at: "2020-01-01T00:00:00.000Z" }];
        await appendRunEvents({ store, principal: null, repoId: REPO, runId, message: `run ${runId}`, decide: () => ({ append, result: undefined }) });
      }
      expect((await archiveEndedRuns({ store, principal: null, repoId: REPO, nowMs: Date.now(), endedRunsAfterMs: 1_000 })).archived).toHaveLength(5);
    } finally {
      await store.close();
    }
    const listed: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const args: string[] = ["runs", "list", "-d", dataDir, "-r", REPO, "--archived", "--limit", "2", ...(after === null ? [] : ["--after", after])];
      type Page = { archivedRuns: number; nextAfter: string | null; runs: { runId: string; archived: boolean; terminal: string }[] };
      const body: Page = (await json<Page>(args)).body;
      expect(body.archivedRuns).toBe(5);
      expect(body.runs.length).toBeLessThanOrEqual(2);
      expect(body.runs.every((r) => r.archived && r.terminal === "RunCompleted")).toBe(true);
      listed.push(...body.runs.map((r) => r.runId));
      after = body.nextAfter;
      if (after === null) break;
    }
    expect(listed).toEqual(["a", "a-b", "b", "c", "c_1"]);
    const human = await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--archived", "--limit", "4"]);
    expect(human.stdout).toContain("--after c\n");
    const live = (await json<{ runs: { runId: string }[]; nextAfter: string | null }>(["runs", "list", "-d", dataDir, "-r", REPO, "--after", "c_1"])).body;
    expect(live).toMatchObject({ runs: [{ runId: "live" }], nextAfter: null });
    // A long read says how far it got on stderr (a clock a second further on at each look).
    let tick = 0;
    const slow = await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--archived", "--json"], { clock: () => new Date(Date.UTC(2026, 4, 1) + 1_000 * tick++) });
    expect(slow.stderr.split("\n").filter((line) => line.startsWith("runs list: read ")).length).toBeGreaterThanOrEqual(2);
    expect((JSON.parse(slow.stdout) as { runs: unknown[] }).runs).toHaveLength(5);
    for (const bad of [["--limit", "0"], ["--limit", "x"], ["--after", "../x"]]) {
      const run = await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--archived", ...bad]);
      expect({ bad, code: run.code }).toEqual({ bad, code: 2 });
    }
  });

  it("lists archived runs, checks the archive ref, and names an archived or unknown run (run_archived, run_not_found)", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await store.initRepo(null, { kind: "workflow-run", id: REPO });
      for (const runId of ["old", "live"]) {
        await appendRunEvents({ store, principal: null, repoId: REPO, runId, message: `start ${runId}`, decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } }], result: undefined }) });
      }
    } finally {
      await store.close();
    }
    expect((await runCli(["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "old"])).code).toBe(0);
    const before = await json<{ runs: unknown[]; archivedRuns: number }>(["runs", "list", "-d", dataDir, "-r", REPO]);
    expect(before.body.archivedRuns).toBe(0);
    const passStore = openWorkflowStore({ dataDir, watch: false });
    try {
      expect((await archiveEndedRuns({ store: passStore, principal: null, repoId: REPO, nowMs: Date.now() + 60_000, endedRunsAfterMs: 1_000 })).archived).toEqual(["old"]);
    } finally {
      await passStore.close();
    }

    // runs list: the live runs and how many are archived; --archived lists those.
    const live = await json<{ ref: string; archivedRuns: number; runs: { runId: string; archived: boolean }[] }>(["runs", "list", "-d", dataDir, "-r", REPO]);
    expect(live.body).toMatchObject({ ref: "refs/heads/main", archivedRuns: 1, runs: [{ runId: "live", archived: false }] });
    const archived = await json<{ ref: string; commitSha: string; runs: { runId: string; terminal: string; archived: boolean; lastSeq: number }[] }>(["runs", "list", "-d", dataDir, "-r", REPO, "--archived"]);
    expect(archived.body).toMatchObject({ ref: "refs/archive/runs", runs: [{ runId: "old", terminal: "RunCompleted", archived: true, lastSeq: 2 }] });
    expect(archived.body.commitSha).toBe((await gitAt(gitdir, ["rev-parse", "refs/archive/runs"])).trim());
    expect((await runCli(["runs", "list", "-d", dataDir, "-r", REPO, "--archived"])).stdout).toContain("archived (RunCompleted)");

    // Operations that would change an archived run say it is archived; an unknown run is not found.
    for (const argv of [
      ["runs", "compact", "-d", dataDir, "-r", REPO, "--run", "old"],
      ["timer", "cancel", "-d", dataDir, "-r", REPO, "--run", "old", "-t", "t"],
      ["runs", "complete", "-d", dataDir, "-r", REPO, "--run", "old"],
    ]) {
      const run = await runCli(argv);
      expect({ argv, code: run.code, error: errorCodeOf(run.stderr) }).toEqual({ argv, code: 1, error: "run_archived" });
    }
    for (const flags of [[], ["--json"]]) {
      const unknown = await runCli(["runs", "show", "-d", dataDir, "-r", REPO, "--run", "never-existed", ...flags]);
      const stdout = flags.length === 0 ? "" : (JSON.parse(unknown.stdout) as { error: { code: string } }).error.code;
      expect({ code: unknown.code, error: errorCodeOf(unknown.stderr), stdout }).toEqual({ code: 1, error: "run_not_found", stdout: flags.length === 0 ? "" : "run_not_found" });
    }

    // check reads the archive ref too: clean first, then a run folder pushed into it that has
    // not ended and an event file that does not parse are problems named by archive path.
    const clean = await json<{ ok: boolean; repos: { archive: { runs: number; events: number; commitSha: string | null } }[] }>(["check", "-d", dataDir]);
    expect(clean.code).toBe(0);
    expect(clean.body.repos[0]?.archive).toMatchObject({ runs: 1, events: 2 });
    const index = join(await tempDir(), "index");
    const env = { GIT_INDEX_FILE: index };
    const blob = async (text: string): Promise<string> => (await git([`--git-dir=${gitdir}`, "hash-object", "-w", "--stdin"], { input: text })).trim();
    await git([`--git-dir=${gitdir}`, "read-tree", "refs/archive/runs"], { env });
    const files: Record<string, string> = {
      "runs/pushed/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00.000Z" } }),
      "runs/broken/events/1.json": '{"seq":1,"type":"RunCompleted"',
    };
    for (const [path, text] of Object.entries(files)) await git([`--git-dir=${gitdir}`, "update-index", "--add", "--cacheinfo", `100644,${await blob(text)},${path}`], { env });
    const tree = (await git([`--git-dir=${gitdir}`, "write-tree"], { env })).trim();
    const commit = (await git([`--git-dir=${gitdir}`, "commit-tree", tree, "-p", "refs/archive/runs", "-m", "pushed into the archive"])).trim();
    await gitAt(gitdir, ["update-ref", "refs/archive/runs", commit]);
    const damaged = await json<{ ok: boolean; problems: { path: string; code: string }[] }>(["check", "-d", dataDir]);
    expect(damaged.code).toBe(1);
    expect(damaged.body.problems.map((p) => [p.path, p.code])).toEqual([
      ["refs/archive/runs:runs/broken/events/1.json", "event_invalid"],
      ["refs/archive/runs:runs/pushed", "event_invalid"],
    ]);
    // Acknowledged like any other problem, by the archived blob it is about.
    expect((await runCli(["check", "-d", dataDir, "--acknowledge", "--by", "ana"])).code).toBe(0);
    expect((await runCli(["check", "-d", dataDir])).code).toBe(0);
  });
});
