/**
 * Tree entries `git fsck` refuses (`..`, `.git`) that reached a deployment anyway (one created
 * before it had `receive.fsckObjects`, or written into it by hand): reported by the readers and
 * never carried into the trees the host writes, so the new commits' trees pass fsck.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCliInProcess } from "../reliability/cli-in-process.js";
import { openGitPusher } from "../reliability/git-pusher.js";

const tempDir = useTempDirs("wh-dotnames-");
const REPO = "dep";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const EVENT = '{"seq":1,"type":"TimerSet","data":{"timerId":"a","fireAt":"2099-01-01T00:00:00Z"}}';

describe("entries named .. or .git in a deployment", () => {
  it("a new deployment refuses them on push (receive.fsckObjects)", async () => {
    const dataDir = await tempDir();
    const store = openWorkflowStore({ dataDir, watch: false });
    await store.initRepo(null, RID);
    await store.close();
    expect((await gitAt(join(dataDir, "deployments", `${REPO}.git`), ["config", "--get", "receive.fsckObjects"])).trim()).toBe("true");
  });

  it("are reported by the readers and dropped from every tree the host rewrites", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const store = openWorkflowStore({ dataDir, watch: false });
    await store.initRepo(null, RID);
    // A deployment made before receive.fsckObjects was set.
    await runGit([`--git-dir=${gitdir}`, "config", "--unset", "receive.fsckObjects"]);
    const pusher = await openGitPusher(gitdir);
    try {
      await pusher.push(
        [
          { path: "runs/r1/events/1.json", bytes: EVENT },
          { path: "../outside.json", bytes: "{}" },
          { path: "runs/../x.json", bytes: "{}" },
          { path: "runs/r1/events/../2.json", bytes: EVENT.replace('"seq":1', '"seq":2') },
          { path: "runs/r1/.git/config", bytes: "[core]\n" },
        ],
        "names git refuses",
      );
    } finally {
      await pusher.close();
    }

    // Read: each is reported where it is, and nothing under it is read as an event.
    const log = await readRunLog(await store.openCommittedReads(null, RID, "main"), "r1");
    expect(log.events.map((e) => e.seq)).toEqual([1]);
    const reported = [...log.bad, ...log.problems].map((b) => b.path);
    expect(reported).toEqual(expect.arrayContaining(["runs/r1/events/..", "runs/r1/.git"]));
    const check = await runCliInProcess(["check", "--data-dir", dataDir, "--json"]);
    const problems = (JSON.parse(check.stdout) as { problems: { path: string }[] }).problems.map((p) => p.path);
    expect(problems).toEqual(expect.arrayContaining(["runs/..", "runs/r1/events/..", "runs/r1/.git"]));

    // Write: the next append rewrites root, runs/, runs/r1 and its events folder without them.
    await appendRunEvents({
      store,
      principal: null,
      repoId: REPO,
      runId: "r1",
      message: "append",
      decide: () => ({ append: [{ type: "TimerCancelled", data: { timerId: "a" } }], result: undefined }),
    });
    await store.close();
    const names = (await gitAt(gitdir, ["ls-tree", "-r", "-t", "--name-only", "main"])).split("\n").filter(Boolean);
    expect(names.filter((n) => n.split("/").some((s) => s === ".." || s === ".git"))).toEqual([]);
    expect(names).toContain("runs/r1/events/2.json");
  });
});
