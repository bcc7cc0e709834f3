/**
 * The rules every route follows, over a real loopback port: a known path answers each method it
 * does not take with 405 and `Allow` (OPTIONS and TRACE included, nothing echoed), an unknown
 * path is 404 whatever the method, and a query field a route does not take is refused (400,
 * naming the field and the ones the route takes), never ignored.
 */
import { readFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { ADMIN_TOKEN, jsonOf, PAYMENTS_TOKEN, useHttpHarness, type HttpHarness } from "./http-harness.js";

const start = useHttpHarness("wh-http-rules-");


interface Answer {
  readonly status: number;
  readonly allow: string | undefined;
  readonly text: string;
}

/** One request with any method node sends (fetch refuses TRACE), on a connection of its own. */
function send(h: HttpHarness, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const { hostname, port } = new URL(h.baseUrl);
  return new Promise((resolve, reject) => {
    const sized = body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) };
    const req = httpRequest({ host: hostname, port: Number(port), method, path, headers: sized, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Raw bytes on a connection of their own; resolves with everything answered until it closes. */
function rawRequest(h: HttpHarness, bytes: string): Promise<string> {
  const { hostname, port } = new URL(h.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("close", () => resolve(text));
    socket.on("error", reject);
  });
}

/** A path of every route, and the methods it takes. */
const ROUTES: ReadonlyArray<readonly [string, string]> = [
  ["/healthz", "GET, HEAD"],
  ["/readyz", "GET, HEAD"],
  ["/", "GET, HEAD"],
  ["/dashboard.js", "GET, HEAD"],
  ["/metrics", "GET, HEAD"],
  ["/v1/deployments", "GET, HEAD"],
  ["/v1/timers", "GET, HEAD"],
  ["/v1/deployments/payments/timers", "GET, HEAD"],
  ["/v1/deployments/payments/runs/r1", "GET, HEAD"],
  ["/v1/deployments/payments/runs/r1/events", "GET, HEAD"],
  ["/v1/deployments/payments/runs/r1/timers/t1", "PUT, DELETE"],
  ["/v1/deployments/payments/runs/r1/signals", "POST"],
  ["/v1/deployments/payments/schedules", "GET, HEAD"],
  ["/v1/deployments/payments/schedules/sync", "POST"],
  ["/v1/schedules/preview", "GET, HEAD"],
  ["/v1/deployments/payments/runs/r1/schedules/s1", "GET, HEAD"],
  ["/v1/deployments/payments/runs/r1/schedules/s1/pause", "POST"],
  ["/v1/deployments/payments/runs/r1/schedules/s1/resume", "POST"],
  ["/v1/deployments/payments/runs/r1/schedules/s1/trigger", "POST"],
  ["/v1/deployments/payments/runs/r1/schedules/s1/backfill", "POST"],
  ["/v1/fires", "GET, HEAD"],
  ["/v1/events", "GET, HEAD"],
  ["/v1/wake", "POST"],
];

/** Methods no route takes, beside the ones of GET/HEAD/POST/PUT/DELETE a route does not take. */
const OTHER_METHODS = ["OPTIONS", "TRACE", "PATCH", "QUERY", "PROPFIND", "PURGE", "LOCK", "M-SEARCH"];

describe("methods", () => {
  it("answers every method a known path does not take with 405 and Allow, OPTIONS and TRACE included, before the token and the body", async () => {
    const h = await start();
    for (const [path, allow] of ROUTES) {
      const taken = allow.split(", ");
      const refused = [...["GET", "HEAD", "POST", "PUT", "DELETE"].filter((m) => !taken.includes(m)), ...OTHER_METHODS];
      for (const method of refused) {
        // No token, and a body that is not JSON: the method is what is wrong, so it is said first.
        const answer = await send(h, method, path, { "content-type": "application/json" }, "{not json");
        expect({ path, method, status: answer.status, allow: answer.allow }).toEqual({ path, method, status: 405, allow });
        if (method !== "HEAD") expect({ path, method, code: (JSON.parse(answer.text) as { code: string }).code }).toEqual({ path, method, code: "method_not_allowed" });
      }
    }
  });

  it("answers any method on an unknown path with 404, and never echoes a TRACE", async () => {
    const h = await start();
    for (const path of ["/v1/nothing-here", "/v2/deployments", "/v1/deployments/payments/runs/r1/timers", "/v1/wake/now"]) {
      for (const method of ["GET", "HEAD", "POST", "PUT", "DELETE", ...OTHER_METHODS]) {
        // A body that is not JSON: the path is what is wrong, so it is said first.
        const answer = await send(h, method, path, { "content-type": "application/json" }, "{not json");
        expect({ path, method, status: answer.status }).toEqual({ path, method, status: 404 });
        if (method !== "HEAD") expect((JSON.parse(answer.text) as { code: string }).code).toBe("route_not_found");
      }
    }
    // The asterisk form names no path either (it was routed as "/": GET * served the dashboard).
    for (const method of ["GET", "HEAD", "OPTIONS", "POST"]) {
      const answer = await rawRequest(h, `${method} * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ method, status: answer.split("\r\n")[0] }).toEqual({ method, status: "HTTP/1.1 404 Not Found" });
    }
    for (const path of ["/v1/deployments", "/v1/nothing-here"]) {
      const traced = await send(h, "TRACE", path, { authorization: `Bearer ${ADMIN_TOKEN}`, "x-probe": "echo-me-7f3a" });
      expect(traced.status).not.toBe(200);
      expect(traced.text).not.toContain("echo-me-7f3a");
      expect(traced.text).not.toContain(ADMIN_TOKEN);
    }
  });

  it("says what is true in a 404's message: a path under /v1 is pointed at the route table, one outside it at /v1", async () => {
    const h = await start();
    const messageOf = async (path: string): Promise<string> => (JSON.parse((await send(h, "GET", path)).text) as { message: string }).message;
    for (const path of ["/v1/nothing-here", "/v1", "/v1/deployments/payments/runs/r1/timers"]) {
      const message = await messageOf(`${path}?x=1`);
      expect({ path, message }).toEqual({ path, message: expect.stringContaining(`no route GET ${path}; `) as unknown });
      expect({ path, message }).toEqual({ path, message: expect.not.stringContaining("under /v1") as unknown });
      expect({ path, message }).toEqual({ path, message: expect.stringContaining("README") as unknown });
    }
    for (const path of ["/v2/deployments", "/deployments", "/v1x/deployments"]) {
      expect({ path, message: await messageOf(path) }).toEqual({ path, message: expect.stringMatching(new RegExp(`no route GET ${path}; the API is under /v1$`)) as unknown });
    }
  });

  it("answers CONNECT with 400 {code, message} instead of dropping the connection, and goes on serving", async () => {
    const h = await start();
    const { hostname, port } = new URL(h.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (chunk: string) => (text += chunk));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
    });
    expect(answer.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(JSON.parse(answer.split("\r\n\r\n")[1] ?? "")).toMatchObject({ code: "request_invalid" });
    expect((await h.request("/v1/deployments")).status).toBe(200);
  });
});

describe("query fields", () => {
  it("refuses a query field a read route does not take (a typo is not a filter that filters nothing), naming it and the route's own", async () => {
    const h = await start();
    await h.request("/v1/deployments/payments/runs/r1/timers/t1", { method: "PUT", body: JSON.stringify({ delayMs: 3_600_000 }) });
    const noQuery = ["/healthz", "/readyz", "/metrics", "/v1/deployments", "/v1/deployments/payments/schedules", "/v1/events"];
    for (const path of noQuery) {
      const answer = await jsonOf(await h.request(`${path}?limt=10`));
      expect({ path, status: answer.status, code: answer.body["code"], keys: Object.keys(answer.body).sort() }).toEqual({ path, status: 400, code: "body_invalid", keys: ["code", "message"] });
      expect(answer.body["message"]).toBe('body_invalid: unknown query field "limt"; this route takes no query');
    }
    // The paged routes name their own fields, as before (page_invalid).
    const paged: Array<[string, string]> = [
      ["/v1/deployments/payments/runs/r1?stauts=ended", "allowed: limit"],
      ["/v1/deployments/payments/runs/r1/events?limt=10", "allowed: after, limit"],
      ["/v1/fires?repo=payments", "allowed: limit"],
      ["/v1/timers?limt=10", "allowed: after, limit"],
      ["/v1/deployments/payments/timers?limt=10", "allowed: after, limit"],
    ];
    for (const [path, allowed] of paged) {
      const answer = await jsonOf(await h.request(path));
      expect({ path, status: answer.status, code: answer.body["code"] }).toEqual({ path, status: 400, code: "page_invalid" });
      expect(answer.body["message"]).toMatch(/unknown query field "(stauts|limt|repo)"; /);
      expect(answer.body["message"]).toContain(allowed);
    }
    // A write route names the one field it takes.
    const cancel = await jsonOf(await h.request("/v1/deployments/payments/runs/r1/timers/t1?reasn=paid", { method: "DELETE" }));
    expect([cancel.status, cancel.body["code"], cancel.body["message"]]).toEqual([400, "body_invalid", 'body_invalid: unknown query field "reasn"; allowed: reason']);
    // What the routes take still works, and a static file of the dashboard ignores its query.
    expect((await h.request("/v1/deployments")).status).toBe(200);
    expect((await h.request("/v1/deployments/payments/runs/r1/events?after=0&limit=10")).status).toBe(200);
    expect((await h.request("/v1/fires?limit=5")).status).toBe(200);
    expect((await h.request("/dashboard.js?v=2", { token: null })).status).toBe(200);
  });

  it("keeps the dashboard's requests within what the routes take", async () => {
    const script = await readFile(new URL("../../../dashboard/dashboard.js", import.meta.url), "utf8");
    // Every query the page builds: only the event pages' `after`.
    const queries = [...script.matchAll(/`(\/v1\/[^`]*)`|"(\/v1\/[^"]*)"/g)].map((m) => m[1] ?? m[2] ?? "").filter((path) => path.includes("?"));
    expect(queries.map((q) => q.replace(/\$\{[^}]*\}/g, "X"))).toEqual(["/v1/deployments/X/runs/X/events?after=X"]);
  });
});

describe("bodies", () => {
  it("refuses a body on a route that takes none (GET, HEAD, DELETE) instead of dropping it, and writes nothing", async () => {
    const h = await start();
    await h.request("/v1/deployments/payments/runs/r1/timers/t1", { method: "PUT", body: JSON.stringify({ delayMs: 3_600_000 }) });
    const cancel = "/v1/deployments/payments/runs/r1/timers/t1";
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    // The reason in the body, as JSON and without a content type: not a cancel without a reason.
    for (const headers of [{ ...auth, "content-type": "application/json" }, auth]) {
      const answer = await send(h, "DELETE", cancel, headers, JSON.stringify({ reason: "paid" }));
      expect({ status: answer.status, body: JSON.parse(answer.text) as unknown }).toEqual({
        status: 400,
        body: { code: "body_invalid", message: "body_invalid: DELETE takes no body; it takes reason in the query (?reason=…)" },
      });
    }
    // A body on a read route is not a filter.
    for (const path of ["/v1/timers", "/v1/deployments/payments/timers", "/v1/deployments/payments/runs/r1/events", "/v1/fires", "/healthz"]) {
      const answer = await send(h, "GET", path, auth, JSON.stringify({ repoId: "shipping" }));
      expect({ path, status: answer.status, code: (JSON.parse(answer.text) as { code: string }).code }).toEqual({ path, status: 400, code: "body_invalid" });
    }
    const chunked = await send(h, "GET", "/v1/timers", { ...auth, "transfer-encoding": "chunked" });
    expect(chunked.status).toBe(400);
    // Nothing was cancelled; an empty body (Content-Length: 0) is no body.
    expect((await h.request("/v1/deployments/payments/timers").then(jsonOf)).body["timers"]).toHaveLength(1);
    expect((await send(h, "GET", "/v1/timers", auth, "")).status).toBe(200);
    const done = await send(h, "DELETE", `${cancel}?reason=paid`, auth, "");
    expect([done.status, (JSON.parse(done.text) as { outcome: string }).outcome]).toEqual([200, "cancelled"]);
  });

  it("refuses a body that gives a key twice (only the last would count), and writes nothing", async () => {
    const h = await start();
    const put = await jsonOf(await h.request("/v1/deployments/payments/runs/r1/timers/t1", { method: "PUT", body: '{"delayMs":3600000,"delayMs":1000}' }));
    expect([put.status, put.body["code"], put.body["message"]]).toEqual([400, "body_invalid", 'body_invalid: the body is not valid: the key "delayMs" is given twice in the top-level object; only the last would count']);
    const signal = await jsonOf(await h.request("/v1/deployments/payments/runs/r1/signals", { method: "POST", body: '{"signalName":"approve","payload":{"by":"ana","by":"bob"}}' }));
    expect([signal.status, signal.body["message"]]).toEqual([400, 'body_invalid: the body is not valid: the key "by" is given twice in payload; only the last would count']);
    expect((await jsonOf(await h.request("/v1/deployments/payments/runs/r1"))).status).toBe(404);
    // The same key in two objects is no repetition; a leading byte order mark is skipped.
    const ok = await h.request("/v1/deployments/payments/runs/r1/signals", { method: "POST", body: '\ufeff{"signalName":"approve","payload":{"signalName":"x"}}' });
    expect(ok.status).toBe(200);
  });
});

describe("requests", () => {
  it("answers an HTTP/1.1 request without Host and one with a token header twice with 400 {code, message}", async () => {
    const h = await start();
    const auth = `Authorization: Bearer ${ADMIN_TOKEN}\r\n`;
    const answerOf = (raw: string): { status: string; body: Record<string, unknown> } => ({
      status: raw.split("\r\n")[0] ?? "",
      body: JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>,
    });
    // Node answered this itself: 400 and an empty chunked body.
    const hostless = answerOf(await rawRequest(h, `GET /v1/deployments HTTP/1.1\r\n${auth}Connection: close\r\n\r\n`));
    expect([hostless.status, hostless.body["code"]]).toEqual(["HTTP/1.1 400 Bad Request", "request_invalid"]);
    // Node kept the first of two Authorization headers (the valid one here) and served it.
    const twice = answerOf(await rawRequest(h, `GET /v1/deployments HTTP/1.1\r\nHost: x\r\n${auth}Authorization: Bearer someone-elses-token-000\r\nConnection: close\r\n\r\n`));
    expect([twice.status, twice.body["code"]]).toEqual(["HTTP/1.1 400 Bad Request", "request_invalid"]);
    const tokensTwice = answerOf(await rawRequest(h, `GET /v1/deployments HTTP/1.1\r\nHost: x\r\nX-Workflow-Host-Token: ${ADMIN_TOKEN}\r\nX-Workflow-Host-Token: ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`));
    expect(tokensTwice.body["code"]).toBe("request_invalid");
    // HTTP/1.0 needs no Host; a proxy's own Authorization beside the host's token header is one of each.
    expect((await rawRequest(h, `GET /v1/deployments HTTP/1.0\r\n${auth}\r\n`)).split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    const beside = await rawRequest(h, `GET /v1/deployments HTTP/1.1\r\nHost: x\r\nAuthorization: Basic cHJveHk6cGFzcw==\r\nX-Workflow-Host-Token: ${ADMIN_TOKEN}\r\nConnection: close\r\n\r\n`);
    expect(beside.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
  });

  it("answers Authorization: Bearer and X-Workflow-Host-Token naming different tokens with 400 (one was taken silently); the same token in both is served", async () => {
    const h = await start();
    for (const other of ["someone-elses-token-000", PAYMENTS_TOKEN]) {
      const answer = await h.request("/v1/deployments", { token: null, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-workflow-host-token": other } });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toEqual({ code: "request_invalid", message: expect.stringContaining("Authorization: Bearer and X-Workflow-Host-Token name different tokens") });
    }
    const same = await h.request("/v1/deployments", { token: null, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "x-workflow-host-token": ADMIN_TOKEN } });
    expect(same.status).toBe(200);
  });
});

