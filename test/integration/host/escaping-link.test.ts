/**
 * A deployment holding a link that leads outside the data dir, met by a running host: that
 * deployment is reported (`repo_failed`, `path_escapes_data_dir`) and retried like any broken
 * deployment, nothing is written outside, and the host's other deployments go on firing.
 */
import { cp, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { createHostMonitor } from "../../../src/http/host-monitor.js";
import { createHttpHandler } from "../../../src/http/http-handler.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { pollFor } from "../reliability/serve-process.js";
import { dirSnapshot } from "../../helpers/dir-snapshot.js";

const tempDir = useTempDirs("wh-escaping-link-");

const snapshot = dirSnapshot;

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

  it("at refs/heads leading into another deployment: that one's refs are untouched and it is served; over HTTP the broken one is a 500 naming no path", async () => {
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
        decide: () => ({ append: [{ type: "TimerSet", data: { timerId: "t1", fireAt: id === "bad" ? "2020-01-01T00:00:00Z" : "2099-01-01T00:00:00Z" } }], result: undefined }),
      });
    }
    await store.close();
    const heads = join(dataDir, "deployments", "bad.git", "refs", "heads");
    await rm(heads, { recursive: true });
    await symlink("../../good.git/refs/heads", heads);
    const goodRefs = join(dataDir, "deployments", "good.git", "refs");
    const before = await snapshot(goodRefs);

    const events: SchedulerEvent[] = [];
    const host = createWorkflowHost({ dataDir, watch: false, onEvent: (e) => events.push(e) });
    await host.start();
    const app = createHttpHandler(host, { authenticate: () => "reader", authorize: () => true, monitor: createHostMonitor() });
    await app.ready();
    try {
      const failed = await pollFor(() => events.find((e) => e.type === "repo_failed" && e.repoId === "bad"), 20_000, 20, "the broken deployment reported");
      expect((failed as { error: { code?: string } }).error.code).toBe("path_escapes_data_dir");
      const good = await app.inject({ method: "GET", url: "/v1/deployments/good/runs/r1", headers: { authorization: "Bearer x" } });
      expect(good.statusCode).toBe(200);
      const bad = await app.inject({ method: "GET", url: "/v1/deployments/bad/runs/r1", headers: { authorization: "Bearer x" } });
      expect([bad.statusCode, (bad.json() as { code: string }).code]).toEqual([500, "path_escapes_data_dir"]);
      expect(bad.body).not.toContain(dataDir);
      expect(events.some((e) => e.type === "fired" && e.repoId === "bad")).toBe(false);
    } finally {
      await app.close();
      await host.stop();
    }
    expect(await snapshot(goodRefs)).toEqual(before);
  });
});
