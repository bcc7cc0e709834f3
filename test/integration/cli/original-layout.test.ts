/**
 * A deployment in the original system's layout, and sealing a run, on real disk with the real
 * `git` CLI checking what was written: `check` reports nothing on the original layout,
 * `runs compact` writes the byte-exact fold git shows, a second call commits nothing, and
 * `runs show` gives the same log before and after.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli, runCliJson } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-original-");
const FIXTURE = fileURLToPath(new URL("../../../fixtures/original-layout/", import.meta.url));
const REPO = "legacy";

const json = runCliJson;

interface Shown {
  events: { seq: number }[];
  bad: unknown[];
  problems: unknown[];
  state: unknown;
}

describe("the original layout and runs compact on real disk", () => {
  it("checks clean, seals an ended run byte for byte, and reads it the same from either form", async () => {
    const dataDir = join(await tempDir(), "data");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await buildFixtureRepo(store, REPO, FIXTURE);
      for (const [runId, ended] of [["done", true], ["live", false]] as const) {
        await appendRunEvents({
          store,
          principal: null,
          repoId: REPO,
          runId,
          message: `events of ${runId}`,
          decide: () => ({
            append: [{ type: "TimerSet", data: { timerId: "t", fireAt: "2026-05-01T11:00:00.000Z" } }, { type: "StepDone", data: { text: "naïve\u2028" } }, ...(ended ? [{ type: "RunFailed" }] : [])],
            result: undefined,
          }),
        });
      }
    } finally {
      await store.close();
    }
    const check = await json<{ ok: boolean; problems: unknown[] }>(["check", "-d", dataDir]);
    expect(check.body.problems).toEqual([]);
    expect(check.code).toBe(0);
    const sealedShown = await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", "sealed-1"]);
    expect(sealedShown.body.events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);

    const before = await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", "done"]);
    const first = await json<{ committed: boolean; commitSha: string; events: number }>(["runs", "compact", "-d", dataDir, "-r", REPO, "--run", "done"]);
    expect(first).toMatchObject({ code: 0, body: { committed: true, events: 3 } });
    expect((await gitAt(gitdir, ["rev-parse", "main"])).trim()).toBe(first.body.commitSha);
    const files: string[] = [];
    for (const seq of [1, 2, 3]) files.push(await gitAt(gitdir, ["cat-file", "blob", `main:runs/done/events/${seq}.json`]));
    expect(await gitAt(gitdir, ["cat-file", "blob", "main:runs/done/events.jsonl"])).toBe(files.map((f) => `${f}\n`).join(""));
    expect(await gitAt(gitdir, ["show", "--name-status", "--format=", "main"])).toBe("A\truns/done/events.jsonl\n");

    const second = await json<{ committed: boolean }>(["runs", "compact", "-d", dataDir, "-r", REPO, "--run", "done"]);
    expect(second).toMatchObject({ code: 0, body: { committed: false } });
    expect((await gitAt(gitdir, ["rev-parse", "main"])).trim()).toBe(first.body.commitSha);
    const after = await json<Shown>(["runs", "show", "-d", dataDir, "-r", REPO, "--run", "done"]);
    expect(after.body.events).toEqual(before.body.events);
    expect(after.body.state).toEqual(before.body.state);
    expect(after.body.problems).toEqual([]);

    const live = await runCli(["runs", "compact", "-d", dataDir, "-r", REPO, "--run", "live"]);
    expect(live.code).toBe(1);
    expect(live.stderr).toMatch(/^workflow-host: event_invalid: /);
    expect((await gitAt(gitdir, ["rev-parse", "main"])).trim()).toBe(first.body.commitSha);

    expect((await json<{ problems: unknown[] }>(["check", "-d", dataDir])).body.problems).toEqual([]);
    await gitAt(gitdir, ["fsck", "--strict", "--no-progress"]);
  });
});
