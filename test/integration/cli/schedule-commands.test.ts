/**
 * `workflow-host schedule …` on real disk: sync from a file, list, pause, trigger, backfill,
 * describe --next, resume, preview, and `runs show` saying why slots were skipped.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { git } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-schedule-cli-");

describe("workflow-host schedule", () => {
  it("syncs, pauses, triggers, backfills, describes and resumes a series, every step an event in the log", async () => {
    const dir = await tempDir();
    const dataDir = join(dir, "data");
    let now = "2026-05-01T10:00:00.000Z";
    const cli = (argv: readonly string[]) => runCli(argv, { clock: () => new Date(now), cwd: dir });
    const json = async <T>(argv: readonly string[]): Promise<T> => {
      const run = await cli([...argv, "--json"]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      return JSON.parse(run.stdout) as T;
    };
    const s = ["-d", dataDir, "-r", "reports", "--run", "nightly", "-t", "hourly"];
    expect((await cli(["repo", "create", "-d", dataDir, "-r", "reports"])).code).toBe(0);
    await writeFile(join(dir, "schedules.json"), JSON.stringify([{ runId: "nightly", timerId: "hourly", cron: "0 * * * *", timezone: "Europe/Rome" }]));

    const dry = await cli(["schedule", "sync", "-d", dataDir, "-r", "reports", "--file", "schedules.json", "--dry-run"]);
    expect(dry.stdout).toContain("create    nightly/hourly");
    expect(dry.stdout).toContain("dry run, nothing written");
    // With --json, sync's progress is NDJSON on stderr; stdout holds the one result object.
    const syncedRun = await cli(["schedule", "sync", "-d", dataDir, "-r", "reports", "--file", "schedules.json", "--json"]);
    expect(syncedRun.code).toBe(0);
    expect(syncedRun.stderr.trim().split("\n").map((l) => JSON.parse(l) as unknown)).toEqual([{ event: "progress", done: 1, total: 1 }]);
    const synced = JSON.parse(syncedRun.stdout) as { commits: string[] };
    expect(synced.commits).toHaveLength(1);
    expect((await json<{ commits: string[] }>(["schedule", "sync", "-d", dataDir, "-r", "reports", "--file", "schedules.json"])).commits).toEqual([]);

    const list = await json<{ repoId: string; series: { timerId: string; nextAt: string; owner: string; paused: boolean }[] }>(["schedule", "list", "-d", dataDir, "-r", "reports"]);
    expect(list).toEqual({ repoId: "reports", series: [expect.objectContaining({ timerId: "hourly", nextAt: "2026-05-01T11:00:00.000Z", owner: "sync", paused: false })], unreadableRuns: [] });

    expect((await json<{ outcome: string }>(["schedule", "pause", ...s, "--reason", "maintenance"])).outcome).toBe("paused");
    const triggered = await json<{ outcome: string; firedAt: string }>(["schedule", "trigger", ...s, "--request-id", "req-1"]);
    expect(triggered).toMatchObject({ outcome: "triggered", firedAt: expect.any(String) as unknown });
    const clockAtTrigger = now;
    now = new Date(Date.parse(now) + 60_000).toISOString();
    // A retry answers the first fire's firedAt, not null and not now.
    expect((await json<{ outcome: string; firedAt: string | null; commitSha: string | null }>(["schedule", "trigger", ...s, "--request-id", "req-1"]))).toMatchObject({ outcome: "duplicate", firedAt: triggered.firedAt, commitSha: null });
    now = clockAtTrigger;
    const back = await json<{ fired: string[] }>(["schedule", "backfill", ...s, "--from", "2026-05-01T07:00:00Z", "--to", "2026-05-01T09:00:00Z"]);
    expect(back.fired).toHaveLength(3);

    now = "2026-05-01T13:30:00.000Z";
    const described = await json<{ paused: boolean; next: { utc: string; local: string }[]; history: { fires: { kind: string }[] } }>(["schedule", "describe", ...s, "--next", "2"]);
    expect(described.paused).toBe(true);
    expect(described.next).toEqual([
      { slot: 1, utc: "2026-05-01T11:00:00.000Z", local: "2026-05-01T13:00:00+02:00" },
      { slot: 2, utc: "2026-05-01T12:00:00.000Z", local: "2026-05-01T14:00:00+02:00" },
    ]);
    expect(described.history.fires.map((f) => f.kind)).toEqual(["manual", "backfill", "backfill", "backfill"]);

    expect(await json<{ outcome: string; skipped: number }>(["schedule", "resume", ...s])).toMatchObject({ outcome: "resumed", skipped: 3 });
    const shown = await cli(["runs", "show", "-d", dataDir, "-r", "reports", "--run", "nightly"]);
    expect(shown.stdout).toMatch(/TimerSkipped +hourly 3 skipped 2026-05-01T11:00:00.000Z..2026-05-01T13:00:00.000Z: paused/);
    expect(shown.stdout).toMatch(/SchedulePaused +hourly \(maintenance\)/);
    expect((await cli(["schedule", "describe", ...s])).stdout).toMatch(/skipped 3 slots .*: paused/);

    const types = await git(["--git-dir", join(dataDir, "deployments", "reports.git"), "log", "--format=%s"]);
    expect(types).toMatch(/Pause schedule hourly of nightly/);
    expect(types).toMatch(/Trigger schedule hourly of nightly \(request req-1\)/);

    // Everything the controls wrote passes the deployment check.
    const checked = await cli(["check", "-d", dataDir]);
    expect(checked.code).toBe(0);

    // Every --json output is one object (a bare array cannot grow new keys).
    const preview = await json<{ cron: string; timezone: string; slots: { utc: string }[] }>(["schedule", "preview", "--cron", "30 2 * * *", "--timezone", "America/New_York", "--after", "2026-03-07T12:00:00Z", "-n", "2"]);
    expect(preview).toMatchObject({ cron: "30 2 * * *", timezone: "America/New_York" });
    expect(preview.slots.map((t) => t.utc)).toEqual(["2026-03-08T07:00:00.000Z", "2026-03-09T06:30:00.000Z"]);
    const missing = await cli(["schedule", "pause", "-d", dataDir, "-r", "reports", "--run", "nightly", "-t", "nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("schedule_not_found");
  });
  it("a sync declaring a series in a run that has ended shows it as a conflict in the dry run and applies the rest; it failed (event_invalid) after cancelling the others", async () => {
    const dir = await tempDir();
    const dataDir = join(dir, "data");
    const cli = (argv: readonly string[]) => runCli(argv, { clock: () => new Date("2026-05-01T10:00:00.000Z"), cwd: dir });
    const r = ["-d", dataDir, "-r", "reports"];
    expect((await cli(["repo", "create", ...r])).code).toBe(0);
    await writeFile(join(dir, "live.json"), JSON.stringify([{ runId: "live", timerId: "a", cron: "0 * * * *" }]));
    expect((await cli(["schedule", "sync", ...r, "--file", "live.json"])).code).toBe(0);
    expect((await cli(["timer", "set", ...r, "--run", "ended", "-t", "t", "--delay-ms", "3600000"])).code).toBe(0);
    expect((await cli(["runs", "complete", ...r, "--run", "ended"])).code).toBe(0);
    await writeFile(join(dir, "ended.json"), JSON.stringify([{ runId: "ended", timerId: "b", cron: "0 * * * *" }]));

    const dry = await cli(["schedule", "sync", ...r, "--file", "ended.json", "--dry-run"]);
    expect(dry.stdout).toMatch(/^conflict\s+ended\/b\s+.*its run has ended \(RunCompleted\)/m);
    expect(dry.stdout).toMatch(/^cancel\s+live\/a/m);
    expect(dry.stdout).not.toMatch(/^create/m);

    const real = await cli(["schedule", "sync", ...r, "--file", "ended.json", "--json"]);
    expect(real.code).toBe(1);
    const body = JSON.parse(real.stdout) as { plan: { cancel: { runId: string }[]; conflicts: { runId: string; reason: string }[] }; commits: string[] };
    expect(body.plan.cancel.map((c) => c.runId)).toEqual(["live"]);
    expect(body.plan.conflicts).toEqual([{ runId: "ended", timerId: "b", reason: "its run has ended (RunCompleted); nothing written" }]);
    expect(body.commits).toHaveLength(1);
    expect(real.stderr).not.toContain("event_invalid");
    const list = JSON.parse((await cli(["schedule", "list", ...r, "--json"])).stdout) as { series: unknown[] };
    expect(list.series).toEqual([]);
  });

  it("exits 2 on a malformed --from, says why a backfill fired nothing, and exits 1 when sync leaves conflicts", async () => {
    const dir = await tempDir();
    const dataDir = join(dir, "data");
    let now = "2026-05-01T10:00:00.000Z";
    const cli = (argv: readonly string[]) => runCli(argv, { clock: () => new Date(now), cwd: dir });
    const s = ["-d", dataDir, "-r", "reports", "--run", "nightly", "-t", "hourly"];
    expect((await cli(["repo", "create", "-d", dataDir, "-r", "reports"])).code).toBe(0);
    // A series armed by hand (no sync mark) is a conflict for a sync that declares it.
    expect((await cli(["timer", "set", ...s, "--cron", "0 * * * *"])).code).toBe(0);

    const malformed = await cli(["schedule", "backfill", ...s, "--from", "2026-11-30", "--to", "2026-05-01T09:00:00Z"]);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain("time_invalid");
    // A range of more slots than --max-ticks is refused whole, saying where a range that fits ends.
    const tooLong = await cli(["schedule", "backfill", ...s, "--from", "2026-05-01T07:00:00Z", "--to", "2026-05-01T09:00:00Z", "--max-ticks", "2", "--json"]);
    expect(tooLong.code).toBe(1);
    expect(JSON.parse(tooLong.stdout)).toEqual({ error: { code: "backfill_too_large", message: expect.stringContaining("the first 2 end at 2026-05-01T08:00:00.000Z: backfill to 2026-05-01T08:00:00.000Z, then from 2026-05-01T09:00:00.000Z") } });

    expect((await cli(["schedule", "pause", ...s])).code).toBe(0);
    now = "2026-05-01T13:00:00.000Z";
    const late = await cli(["schedule", "backfill", ...s, "--from", "2026-05-01T11:00:00Z", "--to", "2026-05-01T12:30:00Z"]);
    expect(late.code).toBe(0);
    expect(late.stdout).toContain("0 slots fired");
    expect(late.stdout).toContain("armed slot 2026-05-01T11:00:00.000Z");

    await writeFile(
      join(dir, "schedules.json"),
      JSON.stringify([
        { runId: "nightly", timerId: "hourly", cron: "0 * * * *" },
        { runId: "other", timerId: "daily", cron: "0 3 * * *" },
      ]),
    );
    const synced = await cli(["schedule", "sync", "-d", dataDir, "-r", "reports", "--file", "schedules.json"]);
    expect(synced.code).toBe(1);
    expect(synced.stdout).toContain("conflict  nightly/hourly");
    expect(synced.stderr).toContain("1 of 1 runs written");
    const list = JSON.parse((await cli(["schedule", "list", "-d", dataDir, "-r", "reports", "--json"])).stdout) as { series: { runId: string; owner?: string }[] };
    expect(list.series.map((x) => x.runId).sort()).toEqual(["nightly", "other"]);

    await writeFile(join(dir, "many.json"), JSON.stringify(Array.from({ length: 10_001 }, (_, i) => ({ runId: `r${i}`, timerId: "t", cron: "0 * * * *" }))));
    const many = await cli(["schedule", "sync", "-d", dataDir, "-r", "reports", "--file", "many.json"]);
    expect(many.code).toBe(1);
    expect(many.stderr).toContain("config_invalid");
  });
});
