/**
 * The HTTP face against a real host on real disk, over a loopback port: every route's success
 * and error statuses, the wake-up contract, tokens limited to one deployment, body limits and
 * ids that try to leave the data dir.
 */
import { readdir, truncate } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { HTTP_STATUS_BY_CODE } from "../../../src/http/http-errors.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { ADMIN_TOKEN, jsonOf, PAYMENTS_TOKEN, READER_TOKEN, startHttpHarness, type HttpHarness } from "./http-harness.js";

const tempDir = useTempDirs("wh-http-");
let harness: HttpHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

async function start(): Promise<HttpHarness & { dataDir: string }> {
  const dataDir = join(await tempDir(), "data");
  harness = await startHttpHarness(dataDir);
  return Object.assign(harness, { dataDir });
}

const json = (body: unknown, method = "POST"): RequestInit => ({ method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });

async function tip(h: HttpHarness, repo: string): Promise<string | null> {
  return h.host.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: repo }, "refs/heads/main");
}

describe("HTTP authentication", () => {
  it("answers 401 without a token or with an unknown one, and accepts both token headers", async () => {
    const h = await start();
    const none = await jsonOf(await h.request("/v1/deployments", { token: null }));
    expect(none.status).toBe(401);
    expect(none.body["code"]).toBe("token_missing");
    const wrong = await jsonOf(await h.request("/v1/deployments", { token: "not-a-known-token-at-all" }));
    expect(wrong.status).toBe(401);
    expect(wrong.body["code"]).toBe("token_invalid");
    expect((await h.request("/v1/deployments", { token: null, headers: { "x-workflow-host-token": ADMIN_TOKEN } })).status).toBe(200);
    expect((await h.request("/v1/deployments")).status).toBe(200);
    expect((await h.request("/metrics", { token: null })).status).toBe(401);
  });

  it("keeps a token limited to one deployment out of every other one (403) and lists only its own", async () => {
    const h = await start();
    await h.request("/v1/deployments/shipping/runs/s1/timers/t", { ...json({ delayMs: 3_600_000 }, "PUT") });
    const listed = await jsonOf(await h.request("/v1/deployments", { token: PAYMENTS_TOKEN }));
    expect((listed.body["deployments"] as { repoId: string }[]).map((d) => d.repoId)).toEqual(["payments"]);
    const before = await tip(h, "shipping");
    const attempts = await Promise.all([
      h.request("/v1/deployments/shipping/timers", { token: PAYMENTS_TOKEN }),
      h.request("/v1/deployments/shipping/runs/s1", { token: PAYMENTS_TOKEN }),
      h.request("/v1/deployments/shipping/runs/s1/timers/x", { token: PAYMENTS_TOKEN, ...json({ delayMs: 1000 }, "PUT") }),
      h.request("/v1/deployments/shipping/runs/s1/timers/t", { token: PAYMENTS_TOKEN, method: "DELETE" }),
      h.request("/v1/deployments/shipping/runs/s1/signals", { token: PAYMENTS_TOKEN, ...json({ signalName: "go" }) }),
      h.request("/v1/wake", { token: PAYMENTS_TOKEN, ...json({ repoId: "shipping", runId: "s1" }) }),
      h.request("/metrics", { token: PAYMENTS_TOKEN }),
    ]);
    for (const response of attempts) expect((await jsonOf(response)).body["code"]).toBe("authorize_denied");
    expect(attempts.map((r) => r.status)).toEqual(attempts.map(() => 403));
    const timers = await jsonOf(await h.request("/v1/timers", { token: PAYMENTS_TOKEN }));
    expect(timers.body["timers"]).toEqual([]);
    expect(await tip(h, "shipping")).toBe(before);
    // A read-only token reads but may not write.
    expect((await h.request("/v1/deployments/payments/timers", { token: READER_TOKEN })).status).toBe(200);
    expect((await h.request("/v1/deployments/payments/runs/r/timers/t", { token: READER_TOKEN, ...json({ delayMs: 5 }, "PUT") })).status).toBe(403);
  });
});

describe("HTTP /v1 routes", () => {
  it("sets, lists and cancels timers, with 400 for bad ids and times and 404 for unknown deployments, runs and timers", async () => {
    const h = await start();
    const set = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/reminder", json({ fireAt: "2099-05-01T09:00:00+02:00" }, "PUT")));
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ repoId: "payments", runId: "order-17", timerId: "reminder", fireAt: "2099-05-01T07:00:00.000Z", committed: true });
    const cron = await jsonOf(await h.request("/v1/deployments/payments/runs/reports/timers/nightly", json({ cron: "0 2 * * *", timezone: "Europe/Berlin" }, "PUT")));
    expect(cron.status).toBe(200);

    const listed = await jsonOf(await h.request("/v1/deployments/payments/timers"));
    expect(listed.status).toBe(200);
    const timers = listed.body["timers"] as { timerId: string; dueInMs: number; fireAt: string; nextTicks?: string[] }[];
    const reminder = timers.find((t) => t.timerId === "reminder");
    expect(reminder?.dueInMs).toBe(Date.parse("2099-05-01T07:00:00.000Z") - Date.parse(listed.body["now"] as string));
    const nightly = timers.find((t) => t.timerId === "nightly");
    expect(nightly?.nextTicks).toHaveLength(5);
    expect(nightly?.nextTicks?.[0]).toBe(nightly?.fireAt);
    expect((await jsonOf(await h.request("/v1/timers"))).body["timers"]).toHaveLength(2);

    const badTime = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/x", json({ fireAt: "2026-02-30T00:00:00Z" }, "PUT")));
    expect([badTime.status, badTime.body["code"]]).toEqual([400, "time_invalid"]);
    const badCron = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/x", json({ cron: "61 * * * *" }, "PUT")));
    expect([badCron.status, badCron.body["code"]]).toEqual([400, "cron_invalid"]);
    const badTimer = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/-bad", json({ delayMs: 5 }, "PUT")));
    expect([badTimer.status, badTimer.body["code"]]).toEqual([400, "id_invalid"]);
    const unknownRepo = await jsonOf(await h.request("/v1/deployments/nowhere/runs/r/timers/t", json({ delayMs: 5 }, "PUT")));
    expect([unknownRepo.status, unknownRepo.body["code"]]).toEqual([404, "repo_not_found"]);
    expect((await h.request("/v1/deployments/nowhere/timers")).status).toBe(404);

    // The library's limit on a reason, with its code, as the CLI's.
    const tooLong = await jsonOf(await h.request(`/v1/deployments/payments/runs/order-17/timers/reminder?reason=${"r".repeat(1_001)}`, { method: "DELETE" }));
    expect([tooLong.status, tooLong.body["code"]]).toEqual([400, "event_invalid"]);
    const cancelled = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/reminder?reason=paid", { method: "DELETE" }));
    expect([cancelled.status, cancelled.body["outcome"]]).toEqual([200, "cancelled"]);
    const again = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/reminder", { method: "DELETE" }));
    expect([again.status, again.body["outcome"]]).toEqual([200, "already_cancelled"]);
    const never = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/never", { method: "DELETE" }));
    expect([never.status, never.body["code"]]).toEqual([404, "timer_not_found"]);
    const noRun = await jsonOf(await h.request("/v1/deployments/payments/runs/ghost/timers/t", { method: "DELETE" }));
    expect([noRun.status, noRun.body["code"]]).toEqual([404, "run_not_found"]);
  });

  it("delivers signals deduplicated by signalId and shows a run's log and state", async () => {
    const h = await start();
    await h.request("/v1/deployments/payments/runs/order-17/timers/due", json({ delayMs: 3_600_000 }, "PUT"));
    const first = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/signals", json({ signalName: "approve", signalId: "approval-17", payload: { by: "ana" } })));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ signalId: "approval-17", seq: 2, duplicate: false });
    const retry = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/signals", json({ signalName: "approve", signalId: "approval-17" })));
    expect(retry.body).toMatchObject({ seq: 2, duplicate: true });

    const shown = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17"));
    expect(shown.status).toBe(200);
    expect((shown.body["events"] as { type: string; seq: number }[]).map((e) => [e.seq, e.type])).toEqual([[1, "TimerSet"], [2, "SignalReceived"]]);
    expect((shown.body["state"] as { unconsumedSignals: unknown[] }).unconsumedSignals).toHaveLength(1);

    expect((await jsonOf(await h.request("/v1/deployments/payments/runs/ghost"))).status).toBe(404);
    // A signal to a run with no log starts its log, as `signal send` and runtime.deliverSignal do:
    // a workflow may wait for its first signal before it wrote anything.
    const fresh = await jsonOf(await h.request("/v1/deployments/payments/runs/ghost/signals", json({ signalName: "go", signalId: "go-1" })));
    expect([fresh.status, fresh.body["seq"], fresh.body["duplicate"]]).toEqual([200, 1, false]);
    expect((await jsonOf(await h.request("/v1/deployments/payments/runs/ghost"))).status).toBe(200);
    const badName = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/signals", json({ signalName: "bad name" })));
    expect([badName.status, badName.body["code"]]).toEqual([400, "id_invalid"]);
    expect((await h.request("/v1/deployments/payments/runs/order-17/signals", json([1, 2]))).status).toBe(400);
    expect((await jsonOf(await h.request("/v1/nothing-here"))).body["code"]).toBe("route_not_found");
    expect((await jsonOf(await h.request("/v1/deployments", { method: "DELETE" }))).status).toBe(405);
  });

  it("refuses a 2 MiB body with 413 and writes nothing", async () => {
    const h = await start();
    await h.request("/v1/deployments/payments/runs/r1/timers/t", json({ delayMs: 3_600_000 }, "PUT"));
    const before = await tip(h, "payments");
    const big = "x".repeat(2 * 1024 * 1024);
    for (const path of ["/v1/deployments/payments/runs/r1/signals", "/v1/wake"]) {
      const answer = await jsonOf(await h.request(path, json({ repoId: "payments", runId: "r1", signalName: "big", payload: big })));
      expect([answer.status, answer.body["code"]]).toEqual([413, "payload_too_large"]);
    }
    expect(await tip(h, "payments")).toBe(before);
  });

  it("answers 400 for ids like ../x and touches nothing outside the data dir", async () => {
    const h = await start();
    const parent = join(h.dataDir, "..");
    const outsideBefore = (await readdir(parent)).sort();
    const attempts = [
      h.request("/v1/deployments/..%2Fx/timers"),
      h.request("/v1/deployments/..%2F..%2Fetc/runs/r/timers/t", json({ delayMs: 5 }, "PUT")),
      h.request("/v1/deployments/payments/runs/..%2Fx/timers/t", json({ delayMs: 5 }, "PUT")),
      h.request("/v1/deployments/payments/runs/..%2Fx", {}),
      h.request("/v1/deployments/payments/runs/r/timers/..%2Fx", { method: "DELETE" }),
      h.request("/v1/deployments/payments/runs/..%2Fx/signals", json({ signalName: "go" })),
      h.request("/v1/wake", json({ repoId: "../x", runId: "r" })),
      h.request("/v1/wake", json({ repoId: "payments", runId: "../x" })),
      h.request("/v1/wake", json({ repoId: "payments", runId: "r", signalId: "../x" })),
    ];
    const answers = await Promise.all(attempts.map(async (a) => jsonOf(await a)));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 400));
    for (const a of answers) expect(["repo_id_invalid", "id_invalid"]).toContain(a.body["code"]);
    expect((await readdir(parent)).sort()).toEqual(outsideBefore);
    expect((await readdir(join(h.dataDir, "deployments"))).sort()).toEqual(["payments.git", "shipping.git"]);
  });

  it("names an unknown deployment by its id, never by the server's path to it (404 repo_not_found)", async () => {
    const h = await start();
    for (const [path, init] of [
      ["/v1/deployments/nowhere/timers", undefined],
      ["/v1/deployments/nowhere/runs/r1", undefined],
      ["/v1/deployments/nowhere/runs/r1/timers/t", json({ delayMs: 5 }, "PUT")],
      ["/v1/deployments/nowhere/runs/r1/signals", json({ signalName: "approve" })],
    ] as const) {
      const answer = await jsonOf(await h.request(path, init));
      expect([answer.status, answer.body["code"]]).toEqual([404, "repo_not_found"]);
      expect(String(answer.body["message"])).not.toContain(h.dataDir);
      expect(String(answer.body["message"])).toContain("nowhere");
    }
  });

  it("lists the timers of every readable deployment when one of them cannot be read, naming it (failedRepos)", async () => {
    const h = await start();
    for (const repo of ["payments", "shipping"]) {
      expect((await h.request(`/v1/deployments/${repo}/runs/order-1/timers/t`, json({ fireAt: "2099-01-01T00:00:00Z" }, "PUT"))).status).toBe(200);
    }
    await truncate(join(h.dataDir, "deployments", "shipping.git", "refs", "heads", "main"), 0);
    const all = await jsonOf(await h.request("/v1/timers"));
    expect(all.status).toBe(200);
    expect((all.body["timers"] as { repoId: string }[]).map((t) => t.repoId)).toEqual(["payments"]);
    expect(all.body["failedRepos"]).toEqual([{ repoId: "shipping", code: "ref_corrupt", message: expect.any(String) }]);
    // One deployment asked for by name is that deployment's error.
    const one = await jsonOf(await h.request("/v1/deployments/shipping/timers"));
    expect([one.status, one.body["code"]]).toEqual([500, "ref_corrupt"]);
    // The server's folders are not the client's business: the host's log has them.
    expect(String(one.body["message"])).not.toContain(h.dataDir);
    expect(JSON.stringify(all.body["failedRepos"])).not.toContain(h.dataDir);
    expect((await jsonOf(await h.request("/v1/deployments/payments/timers"))).body["failedRepos"]).toEqual([]);
  });

  it("refuses a body field it does not know (400 body_invalid) rather than dropping it, writing nothing", async () => {
    const h = await start();
    const before = await tip(h, "payments");
    // A misspelt zone would have set the series in UTC; a misspelt signalId would have
    // delivered each retry of a wake-up again under a fresh id.
    const cases: Array<[string, RequestInit]> = [
      ["/v1/deployments/payments/runs/order-17/timers/nightly", json({ cron: "0 9 * * *", timeZone: "Europe/Berlin" }, "PUT")],
      ["/v1/deployments/payments/runs/order-17/timers/nightly", json({ cron: "0 9 * * *", startAt: "2030-01-01T00:00:00Z" }, "PUT")],
      ["/v1/deployments/payments/runs/order-17/signals", json({ signalName: "approve", signal_id: "a-1" })],
      ["/v1/wake", json({ repoId: "payments", runId: "order-17", signalID: "delivery-1" })],
    ];
    for (const [path, init] of cases) {
      const answer = await jsonOf(await h.request(path, init));
      expect({ path, status: answer.status, code: answer.body["code"] }).toEqual({ path, status: 400, code: "body_invalid" });
    }
    expect(await tip(h, "payments")).toBe(before);
  });

  it("refuses a query field a write route does not take (400 body_invalid) rather than dropping it, writing nothing", async () => {
    const h = await start();
    const set = await h.request("/v1/deployments/payments/runs/order-17/timers/reminder", json({ delayMs: 3_600_000 }, "PUT"));
    expect(set.status).toBe(200);
    const before = await tip(h, "payments");
    // A misspelt ?reason= cancelled the timer without its reason; a signalId put in the query
    // delivered every retry again under a fresh id; a zone in the query set the series in UTC.
    const cases: Array<[string, RequestInit]> = [
      ["/v1/deployments/payments/runs/order-17/timers/reminder?reasn=paid", { method: "DELETE" }],
      ["/v1/deployments/payments/runs/order-17/timers/nightly?timezone=Europe/Berlin", json({ cron: "0 9 * * *" }, "PUT")],
      ["/v1/deployments/payments/runs/order-17/signals?signalId=a-1", json({ signalName: "approve" })],
      ["/v1/wake?signalId=delivery-1", json({ repoId: "payments", runId: "order-17" })],
    ];
    for (const [path, init] of cases) {
      const answer = await jsonOf(await h.request(path, init));
      expect({ path, status: answer.status, code: answer.body["code"] }).toEqual({ path, status: 400, code: "body_invalid" });
      expect(String(answer.body["message"])).toContain("unknown query field");
    }
    expect(await tip(h, "payments")).toBe(before);
    const cancelled = await jsonOf(await h.request("/v1/deployments/payments/runs/order-17/timers/reminder?reason=paid", { method: "DELETE" }));
    expect([cancelled.status, cancelled.body["outcome"]]).toEqual([200, "cancelled"]);
  });

  it("refuses a JSON null body as a body that is not an object (400 body_invalid), as it refuses [] and \"x\"", async () => {
    const h = await start();
    const before = await tip(h, "payments");
    const cases: Array<[string, string]> = [
      ["/v1/wake", "POST"],
      ["/v1/deployments/payments/runs/order-17/signals", "POST"],
      ["/v1/deployments/payments/runs/order-17/timers/nightly", "PUT"],
    ];
    for (const [path, method] of cases) {
      for (const body of ["null", " null ", "[]", '"x"']) {
        const answer = await jsonOf(await h.request(path, { method, body, headers: { "content-type": "application/json" } }));
        expect({ path, body, status: answer.status, code: answer.body["code"] }).toEqual({ path, body, status: 400, code: "body_invalid" });
      }
    }
    expect(await tip(h, "payments")).toBe(before);
  });

  it("answers a bad or unknown query on GET /v1/fires as the event pages do (400 page_invalid), and takes a good limit", async () => {
    const h = await start();
    for (const query of ["limit=abc", "limit=0", "limit=10001", "limit=1e3", "limit=5&limit=6", "limt=5"]) {
      const answer = await jsonOf(await h.request(`/v1/fires?${query}`));
      expect({ query, status: answer.status, code: answer.body["code"] }).toEqual({ query, status: 400, code: "page_invalid" });
    }
    for (const query of ["", "?limit=1", "?limit=10000"]) {
      const answer = await jsonOf(await h.request(`/v1/fires${query}`));
      expect({ query, status: answer.status, fires: Array.isArray(answer.body["fires"]) }).toEqual({ query, status: 200, fires: true });
    }
  });

  it("routes ids of every allowed length (a 128-character run, a 256-character timer)", async () => {
    const h = await start();
    const runId = "r".repeat(128);
    const timerId = "t".repeat(256);
    const set = await jsonOf(await h.request(`/v1/deployments/payments/runs/${runId}/timers/${timerId}`, json({ delayMs: 60_000 }, "PUT")));
    expect([set.status, set.body["timerId"]]).toEqual([200, timerId]);
    const shown = await jsonOf(await h.request(`/v1/deployments/payments/runs/${runId}`));
    expect([shown.status, shown.body["runId"]]).toEqual([200, runId]);
  });

  it("answers a URL that does not decode, or a segment longer than any id, with {code, message} (400 url_invalid)", async () => {
    const h = await start();
    for (const path of ["/v1/deployments/payments/runs/r%zz1", `/v1/deployments/payments/runs/${"r".repeat(5_000)}`]) {
      const answer = await jsonOf(await h.request(path));
      expect({ path: path.slice(0, 60), status: answer.status, keys: Object.keys(answer.body).sort(), code: answer.body["code"] }).toEqual({ path: path.slice(0, 60), status: 400, keys: ["code", "message"], code: "url_invalid" });
    }
  });

  it("answers what node refuses before any route (malformed HTTP, headers over its limit) with {code, message}, and goes on serving", async () => {
    const h = await start();
    const { hostname, port } = new URL(h.baseUrl);
    const raw = (request: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), hostname, () => socket.write(request));
        let answer = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => (answer += chunk));
        socket.on("close", () => resolve(answer));
        socket.on("error", reject);
      });
    const cases: Array<[string, number, string]> = [
      ["GARBAGE\r\n\r\n", 400, "request_invalid"],
      ["GET /v1/deployments HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "request_invalid"],
      [`GET /v1/deployments/payments/runs/${"r".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, "headers_too_large"],
      [`GET /v1/deployments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${"t".repeat(20_000)}\r\n\r\n`, 431, "headers_too_large"],
    ];
    for (const [request, status, code] of cases) {
      const answer = await raw(request);
      const [head = "", body = ""] = answer.split("\r\n\r\n");
      const parsed = JSON.parse(body) as Record<string, unknown>;
      expect({ request: request.slice(0, 40), line: head.split("\r\n")[0], keys: Object.keys(parsed).sort(), code: parsed["code"] }).toEqual({
        request: request.slice(0, 40),
        line: expect.stringMatching(new RegExp(`^HTTP/1\\.1 ${status} `)) as unknown as string,
        keys: ["code", "message"],
        code,
      });
      expect(HTTP_STATUS_BY_CODE[code as keyof typeof HTTP_STATUS_BY_CODE]).toBe(status);
    }
    expect((await h.request("/v1/deployments")).status).toBe(200);
  });

  it("maps every error code to a status once, and unknown failures to 500", () => {
    for (const [code, status] of Object.entries(HTTP_STATUS_BY_CODE)) {
      expect([400, 401, 403, 404, 405, 408, 409, 413, 415, 431, 500, 503], code).toContain(status);
    }
  });
});

describe("POST /v1/wake", () => {
  it("has the six statuses of the wake-up contract", async () => {
    const h = await start();
    await h.request("/v1/deployments/payments/runs/nightly-export/timers/t", json({ delayMs: 3_600_000 }, "PUT"));

    // 200, then the same delivery id again: a duplicate, nothing committed.
    const ok = await jsonOf(await h.request("/v1/wake", { token: null, headers: { "x-workflow-host-token": PAYMENTS_TOKEN, "content-type": "application/octet-stream" }, method: "POST", body: JSON.stringify({ repoId: "payments", runId: "nightly-export", signalId: "delivery-1" }) }));
    expect(ok).toEqual({ status: 200, body: { ok: true, runId: "nightly-export", seq: 2, duplicate: false, signalId: "delivery-1" } });
    const before = await tip(h, "payments");
    const dup = await jsonOf(await h.request("/v1/wake", json({ repoId: "payments", runId: "nightly-export", signalId: "delivery-1" })));
    expect(dup.body).toMatchObject({ ok: true, seq: 2, duplicate: true });
    expect(await tip(h, "payments")).toBe(before);
    const shown = await jsonOf(await h.request("/v1/deployments/payments/runs/nightly-export"));
    expect((shown.body["events"] as { signalName?: string }[])[1]?.signalName).toBe("wake");

    // 400: missing ids, invalid JSON, not an object.
    expect((await h.request("/v1/wake", json({ runId: "nightly-export" }))).status).toBe(400);
    expect((await h.request("/v1/wake", json({ repoId: "payments" }))).status).toBe(400);
    const broken = await jsonOf(await h.request("/v1/wake", { method: "POST", body: "{not json", headers: { "content-type": "application/json" } }));
    expect([broken.status, broken.body["code"]]).toEqual([400, "body_invalid"]);
    expect((await h.request("/v1/wake", { method: "POST" })).status).toBe(400);

    // 401: missing or invalid token.
    expect((await h.request("/v1/wake", { ...json({ repoId: "payments", runId: "nightly-export" }), token: null })).status).toBe(401);
    expect((await h.request("/v1/wake", { ...json({ repoId: "payments", runId: "nightly-export" }), token: "wrong-token-0123456789" })).status).toBe(401);

    // 404: unknown deployment. A run with no log is started by its first wake-up.
    expect((await jsonOf(await h.request("/v1/wake", json({ repoId: "nowhere", runId: "nightly-export" })))).body["code"]).toBe("repo_not_found");
    const newRun = await jsonOf(await h.request("/v1/wake", json({ repoId: "payments", runId: "ghost" })));
    expect([newRun.status, newRun.body["seq"]]).toEqual([200, 1]);

    // 405: every method but POST, with Allow.
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const answer = await h.request("/v1/wake", { method, token: null });
      expect(answer.status, method).toBe(405);
      expect(answer.headers.get("allow")).toBe("POST");
    }

    // 500: an internal failure (a damaged ref), with {code, message} and no stack trace.
    await truncate(join(h.dataDir, "deployments", "payments.git", "refs", "heads", "main"), 0);
    const failed = await h.request("/v1/wake", json({ repoId: "payments", runId: "nightly-export", signalId: "delivery-2" }));
    const text = await failed.text();
    expect(failed.status).toBe(500);
    expect(Object.keys(JSON.parse(text) as object).sort()).toEqual(["code", "message"]);
    expect(text).not.toMatch(/\n\s+at |\.ts:\d+/);
  });
});

describe("probes", () => {
  it("/healthz and /readyz need no token; /readyz is 503 once the host stops", async () => {
    const h = await start();
    expect((await jsonOf(await h.request("/healthz", { token: null }))).body).toMatchObject({ ok: true });
    const ready = await jsonOf(await h.request("/readyz", { token: null }));
    expect(ready).toMatchObject({ status: 200, body: { ready: true, deployments: 2 } });
    await h.host.stop();
    expect((await h.request("/readyz", { token: null })).status).toBe(503);
    expect((await jsonOf(await h.request("/v1/deployments"))).body["code"]).toBe("host_stopped");
  });
});

describe("encoded bodies", () => {
  it("refuses a body sent with a Content-Encoding (415 media_type_unsupported) and writes nothing; it was read as plain text", async () => {
    const h = await start();
    const before = await tip(h, "payments");
    const body = JSON.stringify({ signalName: "approve", signalId: "zipped-1" });
    for (const [encoding, bytes] of [["gzip", gzipSync(body)], ["gzip", Buffer.from(body)], ["br", Buffer.from(body)]] as const) {
      const answer = await jsonOf(await h.request("/v1/deployments/payments/runs/order-9/signals", { method: "POST", body: bytes, headers: { "content-type": "application/json", "content-encoding": encoding } }));
      expect([answer.status, answer.body["code"]]).toEqual([415, "media_type_unsupported"]);
      expect(String(answer.body["message"])).toContain(encoding);
    }
    expect(await tip(h, "payments")).toBe(before);
    const identity = await h.request("/v1/deployments/payments/runs/order-9/signals", { method: "POST", body, headers: { "content-type": "application/json", "content-encoding": "identity" } });
    expect(identity.status).toBe(200);
  });
});

describe("readiness of a failing deployment", () => {
  it("/readyz says a deployment that cannot be read is failing, not that it is still recovering", async () => {
    const h = await start();
    for (const repo of ["payments", "shipping"]) {
      expect((await h.request(`/v1/deployments/${repo}/runs/order-1/timers/t`, json({ fireAt: "2099-01-01T00:00:00Z" }, "PUT"))).status).toBe(200);
    }
    await h.close();
    await truncate(join(h.dataDir, "deployments", "shipping.git", "refs", "heads", "main"), 0);
    // A host started on the damaged deployment: its recovery fails (ref_corrupt) and is retried.
    const again = await startHttpHarness(h.dataDir, []);
    harness = again;
    let ready = await jsonOf(await again.request("/readyz", { token: null }));
    for (let tries = 0; tries < 400 && !JSON.stringify(ready.body["reasons"]).includes("failing"); tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      ready = await jsonOf(await again.request("/readyz", { token: null }));
    }
    expect(ready.status).toBe(503);
    expect(ready.body["reasons"]).toEqual([expect.stringContaining("1 of 2 deployments failing")]);
    expect(JSON.stringify(ready.body)).not.toContain("shipping");
  });
});

describe("GET /v1/events", () => {
  it("answers HEAD at once with the stream's headers and no stream (it never answered and kept a subscription)", async () => {
    const h = await start();
    const response = await h.request("/v1/events", { method: "HEAD", signal: AbortSignal.timeout(20_000) });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect((await h.request("/v1/events", { method: "HEAD", token: null })).status).toBe(401);
  });

  it("streams live fires as server-sent events, only of the deployments the token may read", async () => {
    const h = await start();
    const controller = new AbortController();
    const response = await h.request("/v1/events", { token: PAYMENTS_TOKEN, signal: controller.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    // Shipping fires first, then payments: a stream that leaked would show shipping's fire first.
    await h.nextEvent((e) => e.type === "fired" && e.repoId === "shipping", () => h.request("/v1/deployments/shipping/runs/s1/timers/t", json({ delayMs: 0 }, "PUT")));
    await h.request("/v1/deployments/payments/runs/p1/timers/t", json({ delayMs: 0 }, "PUT"));
    let text = "";
    while (!/event: fired\n/.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
    controller.abort();
    const fired = text.split("\n\n").filter((block) => block.startsWith("event: fired"));
    expect(fired).toHaveLength(1);
    const data = JSON.parse((fired[0] as string).split("\ndata: ")[1] as string) as { repoId: string; fire: { runId: string; latenessMs: number } };
    expect(data.repoId).toBe("payments");
    expect(data.fire.runId).toBe("p1");
    expect(text).not.toContain("shipping");
    expect(text).not.toContain("s1");
  });

  it("needs a token", async () => {
    const h = await start();
    expect((await h.request("/v1/events", { token: null })).status).toBe(401);
  });
});
