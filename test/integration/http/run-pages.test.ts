/**
 * A run's view over HTTP without its whole log: `GET …/runs/:run` gives the summary and the
 * first page, `GET …/runs/:run/events?after=&limit=` the rest, on a real host over a loopback
 * port; archived runs page the same way; bad pages are 400 page_invalid; a refused token gets
 * nothing.
 */
import { describe, expect, it } from "vitest";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { ARCHIVE_REF } from "../../../src/workflow/run-archive.js";
import { jsonOf, PAYMENTS_TOKEN, useHttpHarness, type HttpHarness } from "./http-harness.js";

const start = useHttpHarness("wh-http-pages-");

const EVENTS = 2_500;
const BAD_SEQ = 1_200;

/** Run `long`: seqs 1..2500, a timer at 1, an unreadable event at 1200. */
function longRun(runId: string): Record<string, string | object> {
  const files: Record<string, string | object> = {};
  for (let seq = 1; seq <= EVENTS; seq += 1) files[`runs/${runId}/events/${seq}.json`] = { seq, type: "StepDone", n: seq };
  files[`runs/${runId}/events/1.json`] = { seq: 1, type: "TimerSet", data: { timerId: "later", fireAt: "2099-01-01T00:00:00.000Z" } };
  files[`runs/${runId}/events/${BAD_SEQ}.json`] = '{"type":"TimerSet",}';
  return files;
}


/** Every page of the events route from the start; the seqs and bad seqs seen, and how many pages. */
async function pageThrough(h: HttpHarness, path: string, limit: number): Promise<{ seqs: number[]; bad: number[]; pages: number; archived: unknown[] }> {
  const seqs: number[] = [];
  const bad: number[] = [];
  const archived: unknown[] = [];
  let after: number | null = null;
  let pages = 0;
  do {
    const answer = await jsonOf(await h.request(`${path}/events?limit=${limit}${after === null ? "" : `&after=${after}`}`));
    expect(answer.status).toBe(200);
    pages += 1;
    seqs.push(...(answer.body["events"] as { seq: number }[]).map((e) => e.seq));
    bad.push(...(answer.body["bad"] as { seq: number }[]).map((b) => b.seq));
    archived.push(answer.body["archived"]);
    after = answer.body["nextAfter"] as number | null;
  } while (after !== null && pages < 100);
  return { seqs, bad, pages, archived };
}

const expectedSeqs = Array.from({ length: EVENTS }, (_, i) => i + 1).filter((s) => s !== BAD_SEQ);

describe("GET /v1/deployments/:repo/runs/:run and …/events", () => {
  it("gives the summary and the first page, then pages through every event in seq order", async () => {
    const h = await start();
    await buildFixtureRepo(h.host.store, "payments", longRun("long"));
    const run = await jsonOf(await h.request("/v1/deployments/payments/runs/long"));
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ repoId: "payments", runId: "long", archived: null, eventCount: EVENTS - 1, badCount: 1, problemCount: 0, nextAfter: 100 });
    expect((run.body["events"] as { seq: number }[]).map((e) => e.seq)).toEqual(expectedSeqs.slice(0, 100));
    expect((run.body["state"] as { lastSeq: number; pendingTimers: { timerId: string }[] }).pendingTimers.map((t) => t.timerId)).toEqual(["later"]);
    expect((run.body["bad"] as { seq: number; code: string }[]).map((b) => [b.seq, b.code])).toEqual([[BAD_SEQ, "event_invalid"]]);
    // A smaller first page on request.
    const small = await jsonOf(await h.request("/v1/deployments/payments/runs/long?limit=5"));
    expect([(small.body["events"] as unknown[]).length, small.body["nextAfter"]]).toEqual([5, 5]);

    const paged = await pageThrough(h, "/v1/deployments/payments/runs/long", 1_000);
    expect(paged).toEqual({ seqs: expectedSeqs, bad: [BAD_SEQ], pages: 3, archived: [null, null, null] });
    // The default page is 100 events; past the end is an empty last page.
    const first = await jsonOf(await h.request("/v1/deployments/payments/runs/long/events"));
    expect([(first.body["events"] as unknown[]).length, first.body["nextAfter"]]).toEqual([100, 100]);
    const past = await jsonOf(await h.request(`/v1/deployments/payments/runs/long/events?after=${EVENTS}`));
    expect([past.status, past.body["events"], past.body["nextAfter"]]).toEqual([200, [], null]);
  });

  it("pages a run retention archived the same way", async () => {
    const h = await start();
    await buildFixtureRepo(h.host.store, "payments", longRun("old"), { ref: ARCHIVE_REF });
    const run = await jsonOf(await h.request("/v1/deployments/payments/runs/old"));
    expect(run.body).toMatchObject({ archived: ARCHIVE_REF, eventCount: EVENTS - 1, nextAfter: 100 });
    const paged = await pageThrough(h, "/v1/deployments/payments/runs/old", 700);
    expect({ ...paged, archived: [...new Set(paged.archived)] }).toEqual({ seqs: expectedSeqs, bad: [BAD_SEQ], pages: 4, archived: [ARCHIVE_REF] });
  });

  it("refuses a page out of range with 400 page_invalid before reading anything", async () => {
    const h = await start();
    await buildFixtureRepo(h.host.store, "payments", longRun("long"));
    const bad = ["limit=abc", "limit=0", "limit=100000", "limit=1001", "limit=-1", "limit=1.5", "limit=", "after=-1", "after=x", "after=1&after=2", "limt=5"];
    for (const query of bad) {
      for (const path of ["/v1/deployments/payments/runs/long/events", "/v1/deployments/payments/runs/nowhere/events"]) {
        const answer = await jsonOf(await h.request(`${path}?${query}`));
        expect({ query, status: answer.status, keys: Object.keys(answer.body).sort(), code: answer.body["code"] }).toEqual({ query, status: 400, keys: ["code", "message"], code: "page_invalid" });
      }
    }
    // The run route takes limit only.
    for (const query of ["limit=0", "limit=abc", "after=3"]) {
      const answer = await jsonOf(await h.request(`/v1/deployments/payments/runs/long?${query}`));
      expect([query, answer.status, answer.body["code"]]).toEqual([query, 400, "page_invalid"]);
    }
  });

  it("gives a token without the right to read the deployment nothing, and an unknown run 404", async () => {
    const h = await start();
    await buildFixtureRepo(h.host.store, "shipping", longRun("long"));
    for (const path of ["/v1/deployments/shipping/runs/long", "/v1/deployments/shipping/runs/long/events", "/v1/deployments/shipping/runs/long/events?after=10&limit=5"]) {
      const answer = await jsonOf(await h.request(path, { token: PAYMENTS_TOKEN }));
      expect([path, answer.status, Object.keys(answer.body).sort(), answer.body["code"]]).toEqual([path, 403, ["code", "message"], "authorize_denied"]);
    }
    for (const path of ["/v1/deployments/shipping/runs/nowhere", "/v1/deployments/shipping/runs/nowhere/events"]) {
      const answer = await jsonOf(await h.request(path));
      expect([path, answer.status, answer.body["code"]]).toEqual([path, 404, "run_not_found"]);
    }
  });
});
