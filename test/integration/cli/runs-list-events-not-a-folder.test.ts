/**
 * `runs list` of a run whose `events` entry is a file or a link (pushed with git where the
 * events folder belongs): the run holds no log, and it is named as `check` names it
 * (`event_invalid` at `runs/<id>/events`), with state "unreadable (event_invalid)", in
 * `unreadableRuns`, on stderr, exit 1. It was listed as running with 0 bad, exit 0.
 */
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-runs-list-events-");

describe("runs list of a run whose events entry is no folder", () => {
  it("names a run whose events is a file or a link as unreadable (event_invalid), as check does; the other runs as before; exit 1", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const work = join(root, "work");
    const set = JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } });
    await pushFiles(gitdir, work, { "runs/ok/events/1.json": set, "runs/filev/events": set, "runs/linkev/grants.json": "{}" }, "a run, and a file where an events folder belongs");
    await symlink("../ok/events", join(work, "runs", "linkev", "events"));
    await pushFiles(gitdir, work, {}, "a link where an events folder belongs");

    const json = await cliInProcess(["runs", "list", "-d", dataDir, "-r", "dep", "--json"]);
    expect(json.code).toBe(1);
    const body = JSON.parse(json.stdout) as { runs: { runId: string; lastSeq: number }[]; unreadableRuns: { runId: string; path: string; code: string; message: string }[] };
    expect(body.runs.map((r) => [r.runId, r.lastSeq])).toEqual([["ok", 1]]);
    expect(body.unreadableRuns.map((u) => [u.runId, u.path, u.code])).toEqual([
      ["filev", "runs/filev/events", "event_invalid"],
      ["linkev", "runs/linkev/events", "event_invalid"],
    ]);
    for (const u of body.unreadableRuns) expect(u.message).toContain(`run ${u.runId} of deployment dep has no log to read: runs/${u.runId}/events is not part of the run's folder`);
    expect(json.stderr).toContain("workflow-host: run filev cannot be read: event_invalid: run filev of deployment dep has no log to read");

    const text = await cliInProcess(["runs", "list", "-d", dataDir, "-r", "dep"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^filev\s+-\s+unreadable \(event_invalid\)/m);
    expect(text.stdout).toMatch(/^linkev\s+-\s+unreadable \(event_invalid\)/m);
    expect(text.stdout).toMatch(/^ok\s+1\s+running/m);
    expect(text.stdout).toContain("2 runs could not be read");

    // check names the same entries with the same code.
    const checked = JSON.parse((await cliInProcess(["check", "-d", dataDir, "--json"])).stdout) as { problems: { path: string; code: string }[] };
    expect(checked.problems.map((p) => [p.path, p.code])).toEqual(body.unreadableRuns.map((u) => [u.path, u.code]));
  });
});
