/**
 * A deployment holding a link that leads outside the data dir, met by a running host: that
 * deployment is reported (`repo_failed`, `path_escapes_data_dir`) and retried like any broken
 * deployment, nothing is written outside, and the host's other deployments go on firing.
 */
import { cp, lstat, readdir, rm, symlink } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { pollFor } from "../reliability/serve-process.js";

const tempDir = useTempDirs("wh-escaping-link-");

async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const name of (await readdir(at)).sort()) {
      const path = join(at, name);
      const s = await lstat(path);
      out.push(`${relative(dir, path)} ${s.isDirectory() ? "dir" : s.size} ${s.mtimeMs}`);
      if (s.isDirectory()) await walk(path);
    }
  };
  await walk(dir);
  return out;
}

describe("a host meeting a link that leads outside the data dir", () => {
  for (const linked of ["refs/heads", "objects/pack", "."]) {
    it(`at ${linked === "." ? "the deployment's folder" : linked}: reports that deployment and keeps firing the others`, async () => {
      const dataDir = await tempDir();
      const store = openWorkflowStore({ dataDir, watch: false });
      for (const id of ["bad", "good"]) {
        await store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id });
        await appendRunEvents({
          store,
          principal: null,
          repoId: id,
          runId: "r1",
          message: "set t1",
          decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "t1", fireAt: "2020-01-01T00:00:00Z" } }], result: undefined }),
        });
      }
      await store.close();
      const folder = join(dataDir, "deployments", "bad.git", linked);
      const outside = join(await tempDir(), "elsewhere");
      await cp(folder, outside, { recursive: true });
      await rm(folder, { recursive: true });
      await symlink(outside, folder);
      const before = await snapshot(outside);

      const events: SchedulerEvent[] = [];
      const host = createWorkflowHost({ dataDir, watch: false, onEvent: (e) => events.push(e) });
      await host.start();
      try {
        await pollFor(() => (events.some((e) => e.type === "fired" && e.repoId === "good") ? true : undefined), 20_000, 20, "the healthy deployment's fire");
        const failed = await pollFor(() => events.find((e) => e.type === "repo_failed" && e.repoId === "bad"), 20_000, 20, "the broken deployment reported");
        expect((failed as { error: { code?: string } }).error.code).toBe("path_escapes_data_dir");
        expect(events.some((e) => e.type === "fired" && e.repoId === "bad")).toBe(false);
      } finally {
        await host.stop();
      }
      expect(await snapshot(outside)).toEqual(before);
    });
  }
});
