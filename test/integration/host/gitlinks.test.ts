/**
 * Gitlinks (mode 160000, a submodule's commit) pushed with the real `git` CLI where a run
 * folder, an events folder or an event file should be: reported by a running host (live and at
 * recovery) and by `check`, and never overwritten by the host's own appends.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createWorkflowHost } from "../../../src/host/host.js";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCliInProcess } from "../reliability/cli-in-process.js";
import { openGitPusher } from "../reliability/git-pusher.js";
import { pollFor } from "../reliability/serve-process.js";

const tempDir = useTempDirs("wh-gitlinks-");
const REPO = "dep";
const SUBMODULE_COMMIT = "1234567890abcdef1234567890abcdef12345678";
const GITLINKS = ["runs/r1/events/2.json", "runs/r2/events", "runs/r3"];

function badPaths(events: readonly SchedulerEvent[]): Set<string> {
  return new Set(events.flatMap((e) => (e.type === "bad_event" && e.error.code === "event_invalid" ? [e.path] : [])));
}

/** Messages of the gitlinks' reports that do not say it is a gitlink. */
function unnamedGitlinks(events: readonly SchedulerEvent[]): string[] {
  return events.flatMap((e) => (e.type === "bad_event" && GITLINKS.includes(e.path) && !/\bgitlink \(a submodule commit\)/.test(e.error.message) ? [e.error.message] : []));
}

describe("gitlinks pushed into a deployment", () => {
  it("are reported by serve and check, keep their seq, and are never replaced by an append", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const events: SchedulerEvent[] = [];
    const boot = () => createWorkflowHost({ dataDir, watch: { pollMs: 50, chokidar: false }, onEvent: (e) => events.push(e) });
    const host = boot();
    await host.start();
    await host.createDeployment(REPO);
    const runtime = host.runtime(REPO);
    await runtime.setTimer("r1", { timerId: "far", fireAt: "2099-01-01T00:00:00Z" });

    const pusher = await openGitPusher(gitdir);
    try {
      await pusher.push(
        GITLINKS.map((path) => ({ path, bytes: SUBMODULE_COMMIT, mode: "160000" as const })),
        "gitlinks where the log should be",
      );
    } finally {
      await pusher.close();
    }
    // Live: the tail reports each one.
    await pollFor(async () => (GITLINKS.every((p) => badPaths(events).has(p)) ? true : undefined), 20_000, 50, "every gitlink reported live");
    // Each is named for what it is, whichever rule refused it.
    expect(unnamedGitlinks(events)).toEqual([]);

    // An append to r1 takes the next free seq; the gitlink at seq 2 stays as it was.
    await runtime.setTimer("r1", { timerId: "next", fireAt: "2099-01-02T00:00:00Z" });
    const listed = await gitAt(gitdir, ["ls-tree", "main", "runs/r1/events/"]);
    expect(listed).toContain(`160000 commit ${SUBMODULE_COMMIT}\truns/r1/events/2.json`);
    expect(listed).toMatch(/100644 blob [0-9a-f]{40}\truns\/r1\/events\/3\.json/);
    // Where the gitlink is the events folder or the run folder itself, an append is refused.
    await expect(runtime.setTimer("r2", { timerId: "t", fireAt: "2099-01-01T00:00:00Z" })).rejects.toMatchObject({ code: "path_violation" });
    await expect(runtime.setTimer("r3", { timerId: "t", fireAt: "2099-01-01T00:00:00Z" })).rejects.toMatchObject({ code: "path_violation" });
    expect(await gitAt(gitdir, ["ls-tree", "main", "runs/r2/events", "runs/r3"])).toBe(`160000 commit ${SUBMODULE_COMMIT}\truns/r2/events\n160000 commit ${SUBMODULE_COMMIT}\truns/r3\n`);
    await host.stop();

    // Recovery reports them again.
    events.length = 0;
    const again = boot();
    await again.start();
    expect([...badPaths(events)].filter((p) => GITLINKS.includes(p)).sort()).toEqual([...GITLINKS].sort());
    expect(unnamedGitlinks(events)).toEqual([]);
    await again.stop();

    const check = await runCliInProcess(["check", "--data-dir", dataDir, "--json"]);
    expect(check.code).toBe(1);
    const problems = (JSON.parse(check.stdout) as { problems: { path: string; code: string; message: string }[] }).problems;
    for (const path of GITLINKS) expect(problems.some((p) => p.path === path && p.code === "event_invalid"), path).toBe(true);
    expect(problems.filter((p) => GITLINKS.includes(p.path) && !/\bgitlink \(a submodule commit\)/.test(p.message)).map((p) => p.message)).toEqual([]);
    expect((await gitAt(gitdir, ["fsck", "--strict"])).trim()).toBe("");
  });
});
