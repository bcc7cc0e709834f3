/**
 * `GET /v1/schedules/preview` over a real loopback port: the next slots of a cron expression that
 * is set nowhere (`workflow-host schedule preview --cron … --json`), the same slots as the
 * library's `previewCron` across a DST change, the CLI's validation (an invalid expression or an
 * unknown zone 400 `cron_invalid`, `next` in 1..1000, a bad instant 400 `time_invalid`), any
 * valid token (a read-only one too) and none refused.
 */
import { describe, expect, it } from "vitest";
import { previewCron } from "../../../src/workflow/schedule/preview.js";
import { jsonOf, READER_TOKEN, useHttpHarness } from "./http-harness.js";

const start = useHttpHarness("wh-http-preview-");


const preview = (query: Record<string, string>) => `/v1/schedules/preview?${new URLSearchParams(query).toString()}`;

describe("GET /v1/schedules/preview", () => {
  it("lists the next slots of an expression in UTC and in its zone, as schedule preview does, across a DST change", async () => {
    const h = await start();
    const query = { cron: "30 2 * * *", timezone: "America/New_York", after: "2026-03-07T00:00:00Z", next: "3" };
    const answer = await jsonOf(await h.request(preview(query)));
    expect(answer.status).toBe(200);
    // 2026-03-08 02:30 does not exist in New York: the slot moves to 03:00 EDT.
    expect(answer.body).toEqual({
      cron: "30 2 * * *",
      timezone: "America/New_York",
      after: "2026-03-07T00:00:00Z",
      slots: [
        { slot: 1, utc: "2026-03-07T07:30:00.000Z", local: "2026-03-07T02:30:00-05:00" },
        { slot: 2, utc: "2026-03-08T07:00:00.000Z", local: "2026-03-08T03:00:00-04:00" },
        { slot: 3, utc: "2026-03-09T06:30:00.000Z", local: "2026-03-09T02:30:00-04:00" },
      ],
    });
    expect(answer.body["slots"]).toEqual(previewCron({ cron: "30 2 * * *", timezone: "America/New_York", after: "2026-03-07T00:00:00Z", count: 3 }));

    // Defaults: five slots after now, in UTC; bounds and maxTicks as the CLI's flags.
    const plain = await jsonOf(await h.request(preview({ cron: "*/5 * * * *" })));
    expect(plain.status).toBe(200);
    expect(plain.body["timezone"]).toBe("UTC");
    const slots = plain.body["slots"] as { utc: string }[];
    expect(slots).toHaveLength(5);
    expect(Date.parse(slots[0]!.utc)).toBeGreaterThan(Date.parse(plain.body["after"] as string));
    const bounded = await jsonOf(await h.request(preview({ cron: "0 * * * *", after: "2026-01-01T00:00:00Z", startAt: "2026-01-01T05:00:00Z", endAt: "2026-01-01T07:00:00Z", next: "10" })));
    expect((bounded.body["slots"] as { utc: string }[]).map((s) => s.utc)).toEqual(["2026-01-01T05:00:00.000Z", "2026-01-01T06:00:00.000Z", "2026-01-01T07:00:00.000Z"]);
    const capped = await jsonOf(await h.request(preview({ cron: "0 * * * *", after: "2026-01-01T00:00:00Z", maxTicks: "2", next: "10" })));
    expect(capped.body["slots"]).toHaveLength(2);
    expect((await jsonOf(await h.request(preview({ cron: "0 * * * *", next: "1000" })))).body["slots"]).toHaveLength(1000);
  });

  it("refuses an invalid expression, an unknown zone, a next out of 1..1000 and a bad instant with the code, as the CLI does", async () => {
    const h = await start();
    const cases: [Record<string, string>, number, string][] = [
      [{ cron: "nope" }, 400, "cron_invalid"],
      [{ cron: "" }, 400, "cron_invalid"],
      [{ cron: "61 * * * *" }, 400, "cron_invalid"],
      [{ cron: "0 2 * * *", timezone: "Mars/Olympus" }, 400, "cron_invalid"],
      [{ cron: "0 2 * * *", next: "0" }, 400, "body_invalid"],
      [{ cron: "0 2 * * *", next: "1001" }, 400, "body_invalid"],
      [{ cron: "0 2 * * *", next: "five" }, 400, "body_invalid"],
      [{ cron: "0 2 * * *", maxTicks: "0" }, 400, "body_invalid"],
      [{ cron: "0 2 * * *", after: "yesterday" }, 400, "time_invalid"],
      [{ cron: "0 2 * * *", startAt: "2026-02-01T00:00:00Z", endAt: "2026-01-01T00:00:00Z" }, 400, "time_invalid"],
      [{ timezone: "UTC" }, 400, "body_invalid"],
      [{ cron: "0 2 * * *", count: "3" }, 400, "body_invalid"],
    ];
    for (const [query, status, code] of cases) {
      const answer = await jsonOf(await h.request(preview(query)));
      expect({ query, status: answer.status, code: answer.body["code"] }).toEqual({ query, status, code });
      expect(answer.body["message"]).toEqual(expect.any(String));
    }
    const unknownZone = await jsonOf(await h.request(preview({ cron: "0 2 * * *", timezone: "Mars/Olympus" })));
    expect(unknownZone.body["message"]).toContain("unknown time zone");
    // A field given twice is not one of its values picked.
    const twice = await jsonOf(await h.request("/v1/schedules/preview?cron=0%202%20*%20*%20*&cron=0%203%20*%20*%20*"));
    expect([twice.status, twice.body["code"]]).toEqual([400, "body_invalid"]);
  });

  it("needs a valid token (a read-only one is enough) and takes only GET and HEAD", async () => {
    const h = await start();
    const path = preview({ cron: "0 2 * * *" });
    expect((await h.request(path, { token: null })).status).toBe(401);
    expect((await h.request(path, { token: "not-a-token-0123456789" })).status).toBe(401);
    expect((await h.request(path, { token: READER_TOKEN })).status).toBe(200);
    const posted = await h.request(path, { method: "POST" });
    expect([posted.status, posted.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
  });
});
