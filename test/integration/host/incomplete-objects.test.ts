/**
 * A ref moved by another writer before the objects it needs are all in place (a writer that
 * does not follow git's order, a copy still under way): the host retries the read until the
 * object arrives, and never reports the event as bad content. (A recovery that finds the
 * object still missing reports it as missing, `object_missing`, and reads the run again until
 * it arrives: the timer fires either way.)
 */
import { mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createWorkflowHost } from "../../../src/host/host.js";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { pollFor } from "../reliability/serve-process.js";

const tempDir = useTempDirs("wh-incomplete-");
const REPO = "dep";

describe("a ref that moved before its objects were complete", () => {
  it("is read again once the object is there: the event is applied, never reported bad", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const events: SchedulerEvent[] = [];
    const host = createWorkflowHost({ dataDir, watch: { pollMs: 50, chokidar: false }, discoverEveryMs: 100, onEvent: (e) => events.push(e) });
    await host.start();
    await host.createDeployment(REPO);
    await host.runtime(REPO).setTimer("healthy", { timerId: "far", fireAt: "2099-01-01T00:00:00Z" });

    // A commit adding runs/healthy/events/2.json (a TimerSet due long ago), built with git's
    // plumbing as loose objects; then its blob is taken away before main moves.
    const blob = (await git([`--git-dir=${gitdir}`, "hash-object", "-w", "--stdin"], { input: '{"seq":2,"type":"TimerSet","data":{"timerId":"t","fireAt":"2026-01-01T00:00:00Z"}}' })).trim();
    const index = { GIT_INDEX_FILE: join(root, "index") };
    await git([`--git-dir=${gitdir}`, "read-tree", "main"], { env: index });
    await git([`--git-dir=${gitdir}`, "update-index", "--add", "--cacheinfo", `100644,${blob},runs/healthy/events/2.json`], { env: index });
    const tree = (await git([`--git-dir=${gitdir}`, "write-tree"], { env: index })).trim();
    const parent = (await gitAt(gitdir, ["rev-parse", "main"])).trim();
    const commit = (await gitAt(gitdir, ["commit-tree", tree, "-p", parent, "-m", "an event whose blob comes late"])).trim();
    const loose = join(gitdir, "objects", blob.slice(0, 2), blob.slice(2));
    const away = join(root, "away");
    await mkdir(away);
    await rename(loose, join(away, "blob"));
    await gitAt(gitdir, ["update-ref", "refs/heads/main", commit, parent]);

    // The host sees the commit, cannot read the blob, and says so truthfully (and retries).
    await pollFor(() => (events.some((e) => e.type === "repo_failed") ? true : undefined), 20_000, 50, "the failed read reported");
    // The object arrives.
    await rename(join(away, "blob"), loose);
    const fired = await pollFor(
      () => events.find((e) => e.type === "fired" && e.runId === "healthy" && e.timerId === "t"),
      20_000,
      50,
      "the late event's timer fired",
    );
    expect(fired).toMatchObject({ scheduledFor: "2026-01-01T00:00:00.000Z" });
    expect(events.filter((e) => e.type === "bad_event" && e.error.code !== "object_missing")).toEqual([]);
    await host.stop();
    expect((await gitAt(gitdir, ["fsck", "--strict"])).trim()).toBe("");
  });
});
