/**
 * `runs show` of an id whose `runs/<id>` holds no log (a file or a link pushed with git where a run
 * folder belongs): run_not_found, exit 1, as over HTTP; it printed "0 events" and exited 0, while
 * `check` names the entry as a problem.
 */
import { symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-runs-show-not-a-run-");

describe("runs show of an entry under runs/ that is no run folder", () => {
  it("is run_not_found (exit 1) pointing at check, for a file and a link; a run beside them shows as before", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", "dep.git");
    expect((await cliInProcess(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const work = join(root, "work");
    const set = JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } });
    await pushFiles(gitdir, work, { "runs/ok/events/1.json": set, "runs/filerun": set }, "a run, and a file where a run folder belongs");
    await symlink("../../..", join(work, "runs", "linkrun"));
    await pushFiles(gitdir, work, {}, "a link where a run folder belongs");
    for (const runId of ["filerun", "linkrun"]) {
      const shown = await cliInProcess(["runs", "show", "-d", dataDir, "-r", "dep", "--run", runId]);
      expect({ runId, code: shown.code, stderr: shown.stderr }).toEqual({
        runId,
        code: 1,
        stderr: `workflow-host: run_not_found: run ${runId} has no log in deployment dep (runs/${runId} holds none; workflow-host check names what is there); see workflow-host runs list\n`,
      });
    }
    const ok = await cliInProcess(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "ok"]);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringContaining("run ok in dep at ")]);
    const checked = await cliInProcess(["check", "-d", dataDir]);
    expect(checked.stdout).toContain("runs/filerun: event_invalid: runs/filerun is a file, not a run folder");
  });
});
