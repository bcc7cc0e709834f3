/**
 * `runs list`, `runs show`, `GET …/runs/:run` (and its events pages), the schedule controls' list and sync,
 * and the pending timers (`timers`, `GET /v1/timers`, `GET
 * /v1/deployments/:repoId/timers`) of a run whose `events` entry is a file or a link (pushed with
 * git where the events folder belongs): the run holds no log and is reported as a run that cannot
 * be read, `event_invalid` at `runs/<id>/events`, as `runs list` and `check` name it
 * (src/workflow/unreadable-runs.ts `requireRunLog`). `runs show` printed "0 events" with the
 * problem and exited 0 (`GET …/runs/:run` answered 200); the timers counted the run without
 * naming it, exit 0.
 */
import { symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitAt, pushFiles } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess } from "../host/cli-child.js";
import { startHttpHarness } from "../http/http-harness.js";

const tempDir = useTempDirs("wfh-events-not-a-folder-");

/** Deployment `dep`: `ok` (a timer armed), `filev` (its events entry a file), `linkev` (a link). */
async function deployment(): Promise<string> {
  const root = await tempDir();
  const dataDir = join(root, "data");
  const gitdir = join(dataDir, "deployments", "dep.git");
  expect((await cliInProcess(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
  const work = join(root, "work");
  const set = JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00Z" } });
  await pushFiles(gitdir, work, { "runs/ok/events/1.json": set, "runs/filev/events": set, "runs/linkev/grants.json": "{}" }, "a run, and a file where an events folder belongs");
  await symlink("../ok/events", join(work, "runs", "linkev", "events"));
  await pushFiles(gitdir, work, {}, "a link where an events folder belongs");
  return dataDir;
}

const NAMED = [
  { runId: "filev", path: "runs/filev/events", code: "event_invalid" },
  { runId: "linkev", path: "runs/linkev/events", code: "event_invalid" },
];

const named = (list: readonly { runId: string; path: string; code: string }[]) => list.map((u) => ({ runId: u.runId, path: u.path, code: u.code }));

describe("a run whose events entry is no folder", () => {
  it("names a run whose events is a file or a link as unreadable (event_invalid), as check does; the other runs as before; exit 1", async () => {
    const dataDir = await deployment();

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

  it("runs show reports it as unreadable (event_invalid, exit 1; --json {error}), as runs list does; a readable run shows as before", async () => {
    const dataDir = await deployment();
    for (const runId of ["filev", "linkev"]) {
      const message = `event_invalid: run ${runId} of deployment dep has no log to read: runs/${runId}/events is not part of the run's folder`;
      const text = await cliInProcess(["runs", "show", "-d", dataDir, "-r", "dep", "--run", runId]);
      expect({ runId, code: text.code, stdout: text.stdout }).toEqual({ runId, code: 1, stdout: "" });
      expect(text.stderr).toContain(`workflow-host: ${message}`);
      expect(text.stderr).toContain("workflow-host check names what is there");
      const json = await cliInProcess(["runs", "show", "-d", dataDir, "-r", "dep", "--run", runId, "--json"]);
      expect(json.code).toBe(1);
      const body = JSON.parse(json.stdout) as { error: { code: string; message: string } };
      expect(Object.keys(body)).toEqual(["error"]);
      expect(body.error.code).toBe("event_invalid");
      expect(body.error.message).toContain(message);
      // The same run, path and code as runs list names.
      const listed = JSON.parse((await cliInProcess(["runs", "list", "-d", dataDir, "-r", "dep", "--json"])).stdout) as { unreadableRuns: { runId: string; path: string; code: string; message: string }[] };
      const row = listed.unreadableRuns.find((u) => u.runId === runId);
      expect(row?.code).toBe(body.error.code);
      expect(row?.message).toBe(body.error.message);
    }
    const ok = await cliInProcess(["runs", "show", "-d", dataDir, "-r", "dep", "--run", "ok"]);
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringContaining("run ok in dep at ")]);
  });

  it("timers names it in unreadableRuns (exit 1) and lists the other runs' timers", async () => {
    const dataDir = await deployment();
    for (const args of [[], ["-r", "dep"]]) {
      const json = await cliInProcess(["timers", "-d", dataDir, ...args, "--json"]);
      expect(json.code).toBe(1);
      const body = JSON.parse(json.stdout) as { timers: { runId: string; timerId: string }[]; unreadableRuns: { repoId: string; runId: string; path: string; code: string; message: string }[]; runs: number };
      expect(body.timers.map((t) => `${t.runId}/${t.timerId}`)).toEqual(["ok/t"]);
      expect(named(body.unreadableRuns)).toEqual(NAMED);
      for (const u of body.unreadableRuns) {
        expect(u.repoId).toBe("dep");
        expect(u.message).toContain(`run ${u.runId} of deployment dep has no log to read: runs/${u.runId}/events is not part of the run's folder`);
      }
      expect(body.runs).toBe(3);
      expect(json.stderr).toContain("workflow-host: run filev of dep cannot be read (its timers are not listed): event_invalid: ");
    }
    const text = await cliInProcess(["timers", "-d", dataDir]);
    expect(text.code).toBe(1);
    expect(text.stdout).toContain("2 runs could not be read (timers not listed): dep/filev, dep/linkev");
  });

  it("schedule list and schedule sync name it in unreadableRuns (exit 1); a series declared in it is a conflict, nothing written", async () => {
    const dataDir = await deployment();
    const list = await cliInProcess(["schedule", "list", "-d", dataDir, "-r", "dep", "--json"]);
    expect(list.code).toBe(1);
    expect(named((JSON.parse(list.stdout) as { unreadableRuns: { runId: string; path: string; code: string }[] }).unreadableRuns)).toEqual(NAMED);
    expect(list.stderr).toContain("workflow-host: run filev cannot be read (its series are not listed): event_invalid: ");
    const file = join(dataDir, "schedules.json");
    await writeFile(file, JSON.stringify([{ runId: "filev", timerId: "c", cron: "0 * * * *" }]));
    const tip = await gitAt(join(dataDir, "deployments", "dep.git"), ["rev-parse", "main"]);
    const sync = await cliInProcess(["schedule", "sync", "-d", dataDir, "-r", "dep", "--file", file, "--json"]);
    expect(sync.code).toBe(1);
    const body = JSON.parse(sync.stdout) as { plan: { create: unknown[]; conflicts: { runId: string; timerId: string; reason: string }[] }; commits: string[]; unreadableRuns: { runId: string; path: string; code: string }[] };
    expect(body.plan.create).toEqual([]);
    expect(body.plan.conflicts).toEqual([{ runId: "filev", timerId: "c", reason: expect.stringContaining("its run could not be read (event_invalid) at runs/filev/events") }]);
    expect(body.commits).toEqual([]);
    expect(named(body.unreadableRuns)).toEqual(NAMED);
    expect(await gitAt(join(dataDir, "deployments", "dep.git"), ["rev-parse", "main"])).toBe(tip);
  });

  it("schedule describe, pause, resume, trigger and backfill name it (event_invalid, exit 1), not schedule_not_found; nothing written", async () => {
    const dataDir = await deployment();
    const gitdir = join(dataDir, "deployments", "dep.git");
    const tip = await gitAt(gitdir, ["rev-parse", "main"]);
    for (const runId of ["filev", "linkev"]) {
      for (const verb of [
        ["describe"],
        ["pause"],
        ["resume"],
        ["trigger", "--request-id", "req-1"],
        ["backfill", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-02T00:00:00Z"],
      ]) {
        const out = await cliInProcess(["schedule", verb[0] as string, "-d", dataDir, "-r", "dep", "--run", runId, "-t", "c", ...verb.slice(1)]);
        expect({ runId, verb: verb[0], code: out.code }).toEqual({ runId, verb: verb[0], code: 1 });
        expect(out.stderr).toContain(`workflow-host: event_invalid: run ${runId} of deployment dep has no log to read: runs/${runId}/events is not part of the run's folder`);
        expect(out.stderr).not.toContain("event_invalid: event_invalid:");
      }
    }
    // A run that is not there is still not found.
    const missing = await cliInProcess(["schedule", "describe", "-d", dataDir, "-r", "dep", "--run", "nope", "-t", "c"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("schedule_not_found");
    expect(await gitAt(gitdir, ["rev-parse", "main"])).toBe(tip);
  });

  it("the HTTP schedule routes of it answer 409 event_invalid naming it, as GET …/runs/:run does, not 404; nothing written", async () => {
    const dataDir = await deployment();
    const gitdir = join(dataDir, "deployments", "dep.git");
    const tip = await gitAt(gitdir, ["rev-parse", "main"]);
    const h = await startHttpHarness(dataDir, []);
    try {
      for (const runId of ["filev", "linkev"]) {
        const base = `/v1/deployments/dep/runs/${runId}/schedules/c`;
        for (const [path, init] of [
          [base, {}],
          [`${base}/pause`, { method: "POST" }],
          [`${base}/resume`, { method: "POST" }],
          [`${base}/trigger`, { method: "POST", body: JSON.stringify({ requestId: "req-1" }), headers: { "content-type": "application/json" } }],
          [`${base}/backfill`, { method: "POST", body: JSON.stringify({ from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z" }), headers: { "content-type": "application/json" } }],
        ] as const) {
          const response = await h.request(path, init);
          expect({ path, status: response.status }).toEqual({ path, status: 409 });
          expect(await response.json()).toEqual({ code: "event_invalid", message: expect.stringContaining(`run ${runId} of deployment dep has no log to read: runs/${runId}/events is not part of the run's folder`) });
        }
      }
    } finally {
      await h.close();
    }
    expect(await gitAt(gitdir, ["rev-parse", "main"])).toBe(tip);
  });

  it("GET /v1/timers and /v1/deployments/:repoId/timers name it in unreadableRuns; GET …/runs/:run and its events answer 409 event_invalid naming it", async () => {
    const dataDir = await deployment();
    const h = await startHttpHarness(dataDir, []);
    try {
      for (const runId of ["filev", "linkev"]) {
        for (const path of [`/v1/deployments/dep/runs/${runId}`, `/v1/deployments/dep/runs/${runId}/events`, `/v1/deployments/dep/runs/${runId}/events?after=1&limit=5`]) {
          const response = await h.request(path);
          expect(response.status, path).toBe(409);
          expect(await response.json()).toEqual({ code: "event_invalid", message: expect.stringContaining(`run ${runId} of deployment dep has no log to read: runs/${runId}/events is not part of the run's folder`) });
        }
      }
      expect((await h.request("/v1/deployments/dep/runs/ok")).status).toBe(200);
      expect((await h.request("/v1/deployments/dep/runs/ok/events")).status).toBe(200);
      for (const path of ["/v1/timers", "/v1/deployments/dep/timers"]) {
        const response = await h.request(path);
        expect(response.status).toBe(200);
        const body = (await response.json()) as { timers: { runId: string }[]; unreadableRuns: { repoId: string; runId: string; path: string; code: string; message: string }[] };
        expect(body.timers.map((t) => t.runId)).toEqual(["ok"]);
        expect(named(body.unreadableRuns)).toEqual(NAMED);
        for (const u of body.unreadableRuns) {
          expect(u.repoId).toBe("dep");
          expect(u.message).toContain(`runs/${u.runId}/events of run ${u.runId} cannot be read (event_invalid)`);
        }
      }
    } finally {
      await h.close();
    }
  });
});
