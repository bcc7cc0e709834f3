/**
 * The schedule verbs over HTTP against a real host on real disk, over a loopback port: list,
 * describe (next slots), pause, resume, trigger now, backfill and sync of a declared set, each
 * through the host's schedule controls (what `workflow-host schedule …` calls). Read-only tokens read and may not
 * write, a token of another deployment gets nothing, unknown runs and series are 404, and a bad
 * body or query is 400 with nothing written.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { jsonOf, PAYMENTS_TOKEN, READER_TOKEN, startHttpHarness, type HttpHarness } from "./http-harness.js";

const tempDir = useTempDirs("wh-http-schedules-");
let harness: HttpHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

/** Run `reports` of `payments`: a yearly series (next slot next 1 January, past slots every 1 January) and a one-shot timer. */
const SERIES = "/v1/deployments/payments/runs/reports/schedules/yearly";

async function start(): Promise<HttpHarness> {
  harness = await startHttpHarness(join(await tempDir(), "data"));
  expect((await harness.request("/v1/deployments/payments/runs/reports/timers/yearly", put({ cron: "0 0 1 1 *" }))).status).toBe(200);
  expect((await harness.request("/v1/deployments/payments/runs/reports/timers/once", put({ delayMs: 3_600_000 }))).status).toBe(200);
  return harness;
}

const post = (body?: unknown): RequestInit => (body === undefined ? { method: "POST" } : { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const put = (body: unknown): RequestInit => ({ method: "PUT", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

async function tip(h: HttpHarness, repo = "payments"): Promise<string | null> {
  return h.host.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: repo }, "refs/heads/main");
}

/** Every event of run `reports` (one page holds them all here). */
async function events(h: HttpHarness): Promise<{ seq: number; type: string; data: Record<string, unknown> }[]> {
  const page = await jsonOf(await h.request("/v1/deployments/payments/runs/reports/events?limit=1000"));
  expect(page.status).toBe(200);
  return page.body["events"] as { seq: number; type: string; data: Record<string, unknown> }[];
}

interface Series {
  runId: string;
  timerId: string;
  cron: string;
  nextAt: string;
  paused: boolean;
}

describe("schedule routes", () => {
  it("lists and describes series, pauses and resumes one, triggers it once per requestId and backfills a past range", async () => {
    const h = await start();
    const listed = await jsonOf(await h.request("/v1/deployments/payments/schedules"));
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ repoId: "payments", mayWrite: true, series: [expect.objectContaining({ runId: "reports", timerId: "yearly", cron: "0 0 1 1 *", timezone: "UTC", paused: false, pauseReason: null, lastFire: null, owner: null })], unreadableRuns: [] });
    const nextAt = (listed.body["series"] as Series[])[0]!.nextAt;
    expect(nextAt).toMatch(/^\d{4}-01-01T00:00:00\.000Z$/);

    const described = await jsonOf(await h.request(`${SERIES}?next=3`));
    expect(described.status).toBe(200);
    const year = Number(nextAt.slice(0, 4));
    expect(described.body).toMatchObject({ runId: "reports", timerId: "yearly", nextAt, paused: false });
    expect(described.body["next"]).toEqual([0, 1, 2].map((i) => ({ slot: i + 1, utc: `${year + i}-01-01T00:00:00.000Z`, local: `${year + i}-01-01T00:00:00+00:00` })));
    expect((await jsonOf(await h.request(SERIES))).body["next"]).toHaveLength(5);

    const paused = await jsonOf(await h.request(`${SERIES}/pause`, post({ reason: "warehouse migration" })));
    expect(paused.status).toBe(200);
    expect(paused.body).toEqual({ repoId: "payments", runId: "reports", timerId: "yearly", outcome: "paused", commitSha: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect((await jsonOf(await h.request(`${SERIES}/pause`, post()))).body).toMatchObject({ outcome: "already_paused", commitSha: null });
    expect(((await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as Series[])[0]).toMatchObject({ paused: true, pauseReason: "warehouse migration", nextAt });
    expect((await jsonOf(await h.request(SERIES))).body).toMatchObject({ paused: true, pauseReason: "warehouse migration" });
    // The running scheduler takes the pause up through its tail: the series leaves its queue.
    const queued = (): boolean => h.host.scheduler.queuedTimers().some((t) => t.repoId === "payments" && t.timerId === "yearly");
    await vi.waitFor(() => expect(queued()).toBe(false), { timeout: 20_000 });

    const resumed = await jsonOf(await h.request(`${SERIES}/resume`, post({ catchUp: false })));
    expect([resumed.status, resumed.body["outcome"], resumed.body["skipped"]]).toEqual([200, "resumed", 0]);
    expect((await jsonOf(await h.request(`${SERIES}/resume`, post()))).body).toMatchObject({ outcome: "not_paused", commitSha: null });
    await vi.waitFor(() => expect(queued()).toBe(true), { timeout: 20_000 });
    expect(((await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as Series[])[0]).toMatchObject({ paused: false, pauseReason: null });

    const triggered = await jsonOf(await h.request(`${SERIES}/trigger`, post({ requestId: "deploy-412" })));
    expect(triggered.status).toBe(200);
    expect(triggered.body).toMatchObject({ repoId: "payments", runId: "reports", timerId: "yearly", requestId: "deploy-412", outcome: "triggered" });
    expect(triggered.body["firedAt"]).toEqual(expect.any(String));
    const before = await tip(h);
    const again = await jsonOf(await h.request(`${SERIES}/trigger`, post({ requestId: "deploy-412" })));
    expect([again.status, again.body["outcome"], again.body["firedAt"], again.body["commitSha"]]).toEqual([200, "duplicate", triggered.body["firedAt"], null]);
    expect(await tip(h)).toBe(before);
    const manual = (await events(h)).filter((e) => e.type === "TimerFired" && e.data["manual"] === true);
    expect(manual.map((e) => e.data["requestId"])).toEqual(["deploy-412"]);
    // A trigger does not move the next slot; the list names it as the last fire.
    const afterTrigger = ((await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as Series[])[0]!;
    expect(afterTrigger.nextAt).toBe(nextAt);
    expect(afterTrigger).toMatchObject({ lastFire: { kind: "manual", requestId: "deploy-412", firedAt: triggered.body["firedAt"] } });

    const range = { from: "2024-01-01T00:00:00Z", to: "2025-06-01T00:00:00+02:00" };
    const backfilled = await jsonOf(await h.request(`${SERIES}/backfill`, post(range)));
    expect(backfilled.status).toBe(200);
    expect(backfilled.body).toMatchObject({ repoId: "payments", runId: "reports", timerId: "yearly", fired: ["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"], alreadyFired: [], emptyBecause: null });
    const refill = await jsonOf(await h.request(`${SERIES}/backfill`, post({ ...range, maxTicks: 5 })));
    expect(refill.body).toMatchObject({ fired: [], alreadyFired: ["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"], emptyBecause: "every slot in the range had fired already", commitSha: null });
    const backfills = (await events(h)).filter((e) => e.type === "TimerFired" && e.data["backfill"] === true);
    expect(backfills.map((e) => e.data["scheduledFor"])).toEqual(["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"]);

    // Describe shows the fires.
    const history = (await jsonOf(await h.request(`${SERIES}?next=1&last=2`))).body["history"] as { fires: { kind: string }[] };
    expect(history.fires.map((f) => f.kind)).toEqual(["backfill", "backfill"]);
    expect(((await jsonOf(await h.request(SERIES))).body["history"] as { fires: unknown[] }).fires).toHaveLength(3);
  });

  it("sends each schedule write that committed something to live subscribers (a schedule event), and nothing for a write that wrote nothing", async () => {
    const h = await start();
    const seen: unknown[] = [];
    const stop = h.monitor.subscribe((e) => {
      if (e.type === "schedule") seen.push(e);
    });
    // Published before the answer is sent: what is seen once a request is answered is all of it.
    expect((await h.request(`${SERIES}/pause`, post({ reason: "freeze" }))).status).toBe(200);
    expect(seen).toEqual([{ type: "schedule", repoId: "payments", runId: "reports", timerId: "yearly", action: "pause", outcome: "paused" }]);
    expect((await h.request(`${SERIES}/pause`, post())).status).toBe(200);
    expect((await h.request(`${SERIES}/pause`, { ...post(), token: READER_TOKEN })).status).toBe(403);
    expect(seen).toHaveLength(1);
    expect((await h.request(`${SERIES}/resume`, post())).status).toBe(200);
    expect((await h.request(`${SERIES}/trigger`, post({ requestId: "t-1" }))).status).toBe(200);
    expect((await h.request(`${SERIES}/trigger`, post({ requestId: "t-1" }))).status).toBe(200);
    expect(seen.map((e) => (e as { action: string; outcome: string }).outcome)).toEqual(["paused", "resumed", "triggered"]);
    stop();
  });

  it("lets a read-only token list and describe but not write (403), and keeps a token of another deployment out (403), writing nothing", async () => {
    const h = await start();
    const listed = await jsonOf(await h.request("/v1/deployments/payments/schedules", { token: READER_TOKEN }));
    // The list says the token may not write (the dashboard disables its controls by it).
    expect([listed.status, listed.body["mayWrite"], (listed.body["series"] as Series[]).length]).toEqual([200, false, 1]);
    expect((await h.request(`${SERIES}?next=2`, { token: READER_TOKEN })).status).toBe(200);
    const writes: [string, RequestInit][] = [
      [`${SERIES}/pause`, post({ reason: "no" })],
      [`${SERIES}/resume`, post()],
      [`${SERIES}/trigger`, post({ requestId: "r-1" })],
      [`${SERIES}/backfill`, post({ from: "2024-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z" })],
    ];
    const before = await tip(h);
    for (const [path, init] of writes) {
      const answer = await jsonOf(await h.request(path, { ...init, token: READER_TOKEN }));
      expect({ path, status: answer.status, code: answer.body["code"] }).toEqual({ path, status: 403, code: "authorize_denied" });
    }
    expect(await tip(h)).toBe(before);

    // PAYMENTS_TOKEN reads and writes payments only.
    expect((await h.request("/v1/deployments/shipping/runs/s1/timers/daily", put({ cron: "0 3 * * *" }))).status).toBe(200);
    const shippingBefore = await tip(h, "shipping");
    const shipping = "/v1/deployments/shipping/runs/s1/schedules/daily";
    for (const [path, init] of [["/v1/deployments/shipping/schedules", {}], [shipping, {}], ...writes.map(([p, i]) => [p.replace(SERIES, shipping), i] as const)] as const) {
      const answer = await jsonOf(await h.request(path, { ...init, token: PAYMENTS_TOKEN }));
      expect({ path, status: answer.status, code: answer.body["code"] }).toEqual({ path, status: 403, code: "authorize_denied" });
    }
    expect(await tip(h, "shipping")).toBe(shippingBefore);
    expect((await h.request(`${SERIES}/pause`, { ...post(), token: PAYMENTS_TOKEN })).status).toBe(200);
    // No token at all: 401 before anything else.
    expect((await h.request("/v1/deployments/payments/schedules", { token: null })).status).toBe(401);
  });

  it("answers 404 for an unknown deployment, run or series (a one-shot timer is no series)", async () => {
    const h = await start();
    const before = await tip(h);
    const cases: [string, RequestInit, number, string][] = [
      ["/v1/deployments/nowhere/schedules", {}, 404, "repo_not_found"],
      ["/v1/deployments/nowhere/runs/reports/schedules/yearly/pause", post(), 404, "repo_not_found"],
      ["/v1/deployments/payments/runs/ghost/schedules/yearly", {}, 404, "run_not_found"],
      ["/v1/deployments/payments/runs/ghost/schedules/yearly/trigger", post({ requestId: "r-1" }), 404, "run_not_found"],
      ["/v1/deployments/payments/runs/reports/schedules/never", {}, 404, "schedule_not_found"],
      ["/v1/deployments/payments/runs/reports/schedules/never/pause", post(), 404, "schedule_not_found"],
      ["/v1/deployments/payments/runs/reports/schedules/once/trigger", post({ requestId: "r-1" }), 404, "schedule_not_found"],
      ["/v1/deployments/payments/runs/reports/schedules/once/backfill", post({ from: "2024-01-01T00:00:00Z", to: "2025-01-01T00:00:00Z" }), 404, "schedule_not_found"],
      ["/v1/deployments/payments/runs/reports/schedules/never/resume", post(), 404, "schedule_not_found"],
    ];
    for (const [path, init, status, code] of cases) {
      const answer = await jsonOf(await h.request(path, init));
      expect({ path, status: answer.status, code: answer.body["code"], keys: Object.keys(answer.body).sort() }).toEqual({ path, status, code, keys: ["code", "message"] });
    }
    expect(await tip(h)).toBe(before);
  });

  it("refuses a bad body or query with 400 before anything is written", async () => {
    const h = await start();
    const before = await tip(h);
    const logBefore = await events(h);
    const cases: [string, RequestInit, string][] = [
      [`${SERIES}/trigger`, post(), "body_invalid"],
      [`${SERIES}/trigger`, post({}), "body_invalid"],
      [`${SERIES}/trigger`, post({ requestId: "bad id!" }), "id_invalid"],
      [`${SERIES}/trigger`, post({ requestId: 7 }), "id_invalid"],
      [`${SERIES}/trigger`, post({ requestId: "r-1", reason: "x" }), "body_invalid"],
      [`${SERIES}/trigger`, post([{ requestId: "r-1" }]), "body_invalid"],
      [`${SERIES}/trigger?requestId=r-1`, post(), "body_invalid"],
      [`${SERIES}/backfill`, post({ from: "2026-02-30T00:00:00Z", to: "2026-03-01T00:00:00Z" }), "time_invalid"],
      [`${SERIES}/backfill`, post({ from: "yesterday", to: "2026-03-01T00:00:00Z" }), "time_invalid"],
      [`${SERIES}/backfill`, post({ from: "2024-01-01T00:00:00Z" }), "body_invalid"],
      [`${SERIES}/backfill`, post({ from: "2025-01-01T00:00:00Z", to: "2024-01-01T00:00:00Z" }), "time_invalid"],
      [`${SERIES}/backfill`, post({ from: "2024-01-01T00:00:00Z", to: "2999-01-01T00:00:00Z" }), "time_invalid"],
      [`${SERIES}/backfill`, post({ from: "2020-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z", maxTicks: 2 }), "backfill_too_large"],
      [`${SERIES}/backfill`, post({ from: "2024-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z", maxTicks: 0 }), "body_invalid"],
      [`${SERIES}/backfill`, post({ from: "2024-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z", maxTicks: "5" }), "body_invalid"],
      [`${SERIES}/backfill`, post({ form: "2024-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z" }), "body_invalid"],
      [`${SERIES}/pause`, post({ reason: 5 }), "body_invalid"],
      [`${SERIES}/pause`, post({ reason: "r".repeat(1_001) }), "event_invalid"],
      [`${SERIES}/pause`, post({ reasn: "typo" }), "body_invalid"],
      [`${SERIES}/pause?reason=x`, post(), "body_invalid"],
      [`${SERIES}/resume`, post({ catchUp: "yes" }), "body_invalid"],
      [`${SERIES}/resume`, { method: "POST", body: "{not json" }, "body_invalid"],
      ["/v1/deployments/payments/runs/reports/schedules/-bad/pause", post(), "id_invalid"],
      ["/v1/deployments/payments/runs/..%2Fx/schedules/yearly/trigger", post({ requestId: "r-1" }), "id_invalid"],
      ["/v1/deployments/payments/schedules?repo=payments", {}, "body_invalid"],
      [`${SERIES}?count=3`, {}, "body_invalid"],
      [`${SERIES}?next=0`, {}, "body_invalid"],
      [`${SERIES}?next=1001`, {}, "body_invalid"],
      [`${SERIES}?next=two`, {}, "body_invalid"],
      [`${SERIES}?last=-1`, {}, "body_invalid"],
    ];
    for (const [path, init, code] of cases) {
      const answer = await jsonOf(await h.request(path, init));
      expect({ path, body: init.body, status: answer.status, code: answer.body["code"] }).toEqual({ path, body: init.body, status: 400, code });
    }
    // The messages say what is missing and what a query takes; a range longer than maxTicks,
    // refused whole, where a range that fits ends and where the next starts.
    expect((await jsonOf(await h.request(`${SERIES}/trigger`, post()))).body["message"]).toContain("requestId");
    const tooLong = await jsonOf(await h.request(`${SERIES}/backfill`, post({ from: "2020-01-01T00:00:00Z", to: "2025-06-01T00:00:00Z", maxTicks: 2 })));
    expect(tooLong.body["message"]).toMatch(/^backfill_too_large: .* allowed: at most 2 \(nothing was written; the first 2 end at \S+: backfill to \S+, then from \d{4}-\S+Z\)$/);
    expect((await jsonOf(await h.request(`${SERIES}?count=3`))).body["message"]).toBe('body_invalid: unknown query field "count"; allowed: next, last');
    // A maxTicks past 2^53 − 1 is refused without echoing the rounded number JSON reading made of it.
    const backfill = (maxTicks: string): RequestInit => ({ method: "POST", body: `{"from":"2024-01-01T00:00:00Z","to":"2025-06-01T00:00:00Z","maxTicks":${maxTicks}}`, headers: { "content-type": "application/json" } });
    for (const [maxTicks, message] of [
      ["9007199254740993", "body_invalid: maxTicks is not a whole number in 1..1000"],
      ["1e400", "body_invalid: maxTicks is not a whole number in 1..1000"],
      ["1001", "body_invalid: maxTicks 1001 is not a whole number in 1..1000"],
      ["2.5", "body_invalid: maxTicks 2.5 is not a whole number in 1..1000"],
    ] as const) {
      const answer = await jsonOf(await h.request(`${SERIES}/backfill`, backfill(maxTicks)));
      expect({ maxTicks, status: answer.status, message: answer.body["message"] }).toEqual({ maxTicks, status: 400, message });
    }
    expect(await tip(h)).toBe(before);
    expect(await events(h)).toEqual(logBefore);
  });

  it("syncs a declared set: a dry run reads only, a second sync writes nothing, a series it does not own is a conflict, a bad set is 400", async () => {
    const h = await start();
    const sync = "/v1/deployments/payments/schedules/sync";
    const declared = [{ runId: "reports", timerId: "daily", cron: "30 2 * * *", timezone: "Europe/Rome" }];
    const before = await tip(h);
    const bad: [unknown, string][] = [
      [undefined, "body_invalid"],
      [{}, "body_invalid"],
      [{ schedules: declared, dryRun: "yes" }, "body_invalid"],
      [{ schedules: declared, dryrun: true }, "body_invalid"],
      [{ schedules: "daily" }, "config_invalid"],
      [{ schedules: [...declared, ...declared] }, "config_invalid"],
      [{ schedules: [{ ...declared[0], cron: "61 * * * *" }] }, "cron_invalid"],
      [{ schedules: [{ ...declared[0], runId: "../x" }] }, "id_invalid"],
    ];
    for (const [body, code] of bad) {
      const answer = await jsonOf(await h.request(sync, post(body)));
      expect({ body, status: answer.status, code: answer.body["code"] }).toEqual({ body, status: 400, code });
    }
    expect(await tip(h)).toBe(before);

    // A dry run needs the right to read only; the sync itself the right to write.
    const dry = await jsonOf(await h.request(sync, { ...post({ schedules: declared, dryRun: true }), token: READER_TOKEN }));
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ repoId: "payments", dryRun: true, commits: [], unreadableRuns: [] });
    expect((dry.body["plan"] as { create: { timerId: string }[] }).create.map((d) => d.timerId)).toEqual(["daily"]);
    expect((await jsonOf(await h.request(sync, { ...post({ schedules: declared }), token: READER_TOKEN }))).status).toBe(403);
    expect((await jsonOf(await h.request("/v1/deployments/shipping/schedules/sync", { ...post({ schedules: [], dryRun: true }), token: PAYMENTS_TOKEN }))).status).toBe(403);
    expect(await tip(h)).toBe(before);

    const synced = await jsonOf(await h.request(sync, post({ schedules: declared })));
    expect(synced.status).toBe(200);
    expect(synced.body["commits"]).toHaveLength(1);
    const series = (await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as (Series & { owner: string | null })[];
    expect(series.map((x) => [x.timerId, x.owner])).toEqual([["daily", "sync"], ["yearly", null]]);
    const again = await jsonOf(await h.request(sync, post({ schedules: declared })));
    expect(again.body).toMatchObject({ commits: [], plan: { create: [], update: [], cancel: [], unchanged: [{ runId: "reports", timerId: "daily" }], conflicts: [] } });

    // A series armed without the sync mark is left alone and named; the rest is applied.
    const mixed = await jsonOf(await h.request(sync, post({ schedules: [{ runId: "reports", timerId: "yearly", cron: "0 0 * * *" }] })));
    expect(mixed.status).toBe(200);
    const plan = mixed.body["plan"] as { cancel: { timerId: string }[]; conflicts: { timerId: string }[] };
    expect([plan.cancel.map((c) => c.timerId), plan.conflicts.map((c) => c.timerId)]).toEqual([["daily"], ["yearly"]]);
    const left = (await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as Series[];
    expect(left.map((x) => [x.timerId, x.cron])).toEqual([["yearly", "0 0 1 1 *"]]);
  });

  it("a sync declaring a series in a run that has ended plans it as a conflict (dry run included) and applies the rest, 200; it was a 400 after the other runs were written", async () => {
    const h = await start();
    const sync = "/v1/deployments/payments/schedules/sync";
    expect((await jsonOf(await h.request(sync, post({ schedules: [{ runId: "live", timerId: "a", cron: "0 * * * *" }] })))).status).toBe(200);
    expect((await h.request("/v1/deployments/payments/runs/ended/timers/t", put({ delayMs: 3_600_000 }))).status).toBe(200);
    await h.host.runtime("payments").completeRun("ended");
    const declared = [{ runId: "ended", timerId: "b", cron: "0 * * * *" }];
    const conflict = { runId: "ended", timerId: "b", reason: "its run has ended (RunCompleted); nothing written" };

    const before = await tip(h);
    const dry = await jsonOf(await h.request(sync, post({ schedules: declared, dryRun: true })));
    expect(dry.status).toBe(200);
    expect(dry.body["plan"]).toMatchObject({ create: [], cancel: [{ runId: "live", timerId: "a" }], conflicts: [conflict] });
    expect(await tip(h)).toBe(before);

    const synced = await jsonOf(await h.request(sync, post({ schedules: declared })));
    expect(synced.status).toBe(200);
    expect(synced.body["plan"]).toMatchObject({ create: [], cancel: [{ runId: "live", timerId: "a" }], conflicts: [conflict] });
    expect(synced.body["commits"]).toHaveLength(1);
    const left = (await jsonOf(await h.request("/v1/deployments/payments/schedules"))).body["series"] as Series[];
    expect(left.map((x) => `${x.runId}/${x.timerId}`)).toEqual(["reports/yearly"]);
    const ended = await jsonOf(await h.request("/v1/deployments/payments/runs/ended/events?limit=1000"));
    expect((ended.body["events"] as { type: string }[]).map((e) => e.type)).toEqual(["TimerSet", "RunCompleted"]);
  });

  it("says a series of a run that has ended is not armed without naming the run twice", async () => {
    const h = await start();
    await h.host.runtime("payments").completeRun("reports");
    const answer = await jsonOf(await h.request(`${SERIES}/pause`, post()));
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ code: "schedule_not_found", message: expect.stringContaining("schedule yearly of run reports is not armed: the run has ended (RunCompleted)") });
  });
});
