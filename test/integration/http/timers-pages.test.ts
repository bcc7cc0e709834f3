/**
 * `GET /v1/timers?limit=&after=` pages the pending timers (keyset paging on fireAt, then repo,
 * run and timer id): the pages together are the whole listing; a timer set or fired between two
 * pages never makes the next page repeat or skip another; a cursor the server did not hand out
 * and a limit out of range are 400 `page_invalid`. A real host on a loopback port.
 */
import { describe, expect, it } from "vitest";
import { useHttpHarness, type HttpHarness } from "./http-harness.js";

const start = useHttpHarness("wh-http-timer-pages-");

interface Listed {
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
  readonly fireAt: string;
}
interface TimersAnswer {
  readonly timers: Listed[];
  readonly nextAfter: string | null;
}

const keyOf = (t: Listed): string => `${t.repoId}/${t.runId}/${t.timerId}@${t.fireAt}`;
const setTimer = async (h: HttpHarness, repo: string, run: string, timer: string, fireAt: string): Promise<void> => {
  const answer = await h.request(`/v1/deployments/${repo}/runs/${run}/timers/${timer}`, { method: "PUT", body: JSON.stringify({ fireAt }), headers: { "content-type": "application/json" } });
  expect(answer.status).toBe(200);
};
const list = async (h: HttpHarness, path: string): Promise<TimersAnswer> => {
  const answer = await h.request(path);
  expect(answer.status).toBe(200);
  return (await answer.json()) as TimersAnswer;
};

/** 3 deployments' worth of timers over 2 deployments, several at one instant (the order's ties). */
async function seed(h: HttpHarness): Promise<void> {
  for (let i = 0; i < 23; i++) {
    const repo = i % 2 === 0 ? "payments" : "shipping";
    // Five instants: ties across deployments, runs and timers of one run.
    const fireAt = new Date(Date.UTC(2099, 0, 1 + (i % 5))).toISOString();
    await setTimer(h, repo, `run-${i % 7}`, `t-${i}`, fireAt);
  }
}

describe("GET /v1/timers in pages", () => {
  it("pages of any size put together are the whole listing, in its order", async () => {
    const h = await start();
    await seed(h);
    const whole = await list(h, "/v1/timers");
    expect(whole.timers).toHaveLength(23);
    expect(whole.nextAfter).toBeNull();
    for (const limit of [1, 4, 22, 23, 100]) {
      const pages: Listed[] = [];
      let after: string | null = null;
      let requests = 0;
      do {
        const page: TimersAnswer = await list(h, `/v1/timers?limit=${limit}${after === null ? "" : `&after=${after}`}`);
        expect(page.timers.length).toBeLessThanOrEqual(limit);
        pages.push(...page.timers);
        after = page.nextAfter;
        requests++;
      } while (after !== null && requests < 100);
      expect(pages.map(keyOf)).toEqual(whole.timers.map(keyOf));
      expect(requests).toBe(Math.max(1, Math.ceil(23 / limit)));
    }
    // One deployment's listing pages the same way.
    const first = await list(h, "/v1/deployments/shipping/timers?limit=5");
    const rest = await list(h, `/v1/deployments/shipping/timers?after=${first.nextAfter ?? ""}`);
    expect([...first.timers, ...rest.timers].map(keyOf)).toEqual(whole.timers.filter((t) => t.repoId === "shipping").map(keyOf));
    expect(rest.nextAfter).toBeNull();
  }, 60_000);

  it("timers set or cancelled between two pages move nothing else: no repeat, no skip", async () => {
    const h = await start();
    await seed(h);
    const whole = await list(h, "/v1/timers");
    const first = await list(h, "/v1/timers?limit=10");
    const seen = new Set(first.timers.map(keyOf));
    // Before the cursor (earlier than every listed timer), after it, and one listed timer cancelled.
    await setTimer(h, "payments", "early", "e", "2098-01-01T00:00:00.000Z");
    await setTimer(h, "shipping", "late", "l", "2100-01-01T00:00:00.000Z");
    const cancelled = first.timers[3] as Listed;
    expect((await h.request(`/v1/deployments/${cancelled.repoId}/runs/${cancelled.runId}/timers/${cancelled.timerId}`, { method: "DELETE" })).status).toBe(200);
    const rest: Listed[] = [];
    let after = first.nextAfter;
    while (after !== null) {
      const page = await list(h, `/v1/timers?limit=10&after=${after}`);
      rest.push(...page.timers);
      after = page.nextAfter;
    }
    expect(rest.filter((t) => seen.has(keyOf(t)))).toEqual([]);
    expect(rest.map(keyOf)).toEqual([...whole.timers.slice(10).map(keyOf), "shipping/late/l@2100-01-01T00:00:00.000Z"]);
  }, 60_000);

  it("refuses a cursor it did not hand out, a limit out of range and another field: 400 page_invalid", async () => {
    const h = await start();
    const cursor = Buffer.from(JSON.stringify([1, "payments", "r", "t"])).toString("base64url");
    for (const query of ["limit=0", "limit=10001", "limit=x", "limit=1&limit=2", "after=%2F%2F", `after=${Buffer.from("[1,2]").toString("base64url")}`, `after=${Buffer.from("not json").toString("base64url")}`, "page=2", `after=${cursor}&after=${cursor}`]) {
      for (const path of ["/v1/timers", "/v1/deployments/payments/timers"]) {
        const answer = await h.request(`${path}?${query}`);
        expect({ query, path, status: answer.status }).toEqual({ query, path, status: 400 });
        expect(((await answer.json()) as { code: string }).code).toBe("page_invalid");
      }
    }
    // A well-formed cursor past every timer is an empty last page; one before them all, the first page.
    await setTimer(h, "payments", "r", "u", "2099-01-01T00:00:00.000Z");
    const empty = await list(h, `/v1/timers?after=${Buffer.from(JSON.stringify([8_640_000_000_000_000, "z", "z", "z"])).toString("base64url")}`);
    expect(empty).toMatchObject({ timers: [], nextAfter: null });
    expect((await list(h, `/v1/timers?after=${cursor}&limit=3`)).timers.map(keyOf)).toEqual(["payments/r/u@2099-01-01T00:00:00.000Z"]);
  }, 60_000);
});
