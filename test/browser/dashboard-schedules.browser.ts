/**
 * The dashboard's schedules in a real headless Chromium (the system's `chromium`, driven by
 * puppeteer-core) against a real host over loopback: each deployment's series listed (run, timer,
 * cron, zone, state, next fires, last fire); pause with a reason, then resume, through the page's
 * controls, the state shown changing and the host holding it; trigger now; a pause made by another
 * client shown live; a reason holding HTML shown as text; backfill of a past range from a form
 * prefilled with the last tick (or an hour ago) and now, the count fired shown and a refused range
 * shown with the route's message; controls disabled (backfill not offered) for a read-only token,
 * and a write refused after the token lost its right shown with the route's 403. A screenshot is
 * written to test-results/dashboard-schedules.png.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterEach, describe, expect, it } from "vitest";
import type { TokenAuth } from "../../src/http/http-tokens.js";
import { parseTokenFile } from "../../src/http/http-tokens.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../helpers/temp-dir.js";
import { ADMIN_TOKEN, jsonOf, PAYMENTS_TOKEN, READER_TOKEN, startHttpHarness, TOKEN_FILE, type HttpHarness } from "../integration/http/http-harness.js";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const tempDir = useTempDirs("wh-browser-schedules-");
let harness: HttpHarness | null = null;
let browser: Browser | null = null;
afterEach(async () => {
  await browser?.close();
  browser = null;
  await harness?.close();
  harness = null;
});

const json = (method: string, body: unknown): RequestInit => ({ method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const YEARLY = "/v1/deployments/payments/runs/reports/schedules/yearly";
const ROW = '#schedules tr[data-series="payments/reports/yearly"]';
/** A pause reason is free text a user typed: it must reach the page as text, never as markup. */
const HTML_REASON = '<img src=x onerror="window.__injected=1"><b>warehouse</b> migration';

async function openPage(h: HttpHarness, token: string): Promise<{ page: Page; errors: string[] }> {
  expect(existsSync(CHROMIUM), `${CHROMIUM} (apt-get install chromium)`).toBe(true);
  browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
  const page = await browser.newPage();
  await page.setViewport({ width: 1500, height: 1100 });
  const errors: string[] = [];
  page.on("console", (message) => {
    // A refused request (400, 403) is logged by the browser itself; the page shows it (asserted below).
    if (message.type() === "error" && !/status of 40[03]\b/.test(message.text())) errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`${h.baseUrl}/#token=${token}`, { waitUntil: "load" });
  return { page, errors };
}

const textOf = (page: Page, selector: string) => page.$eval(selector, (n) => n.textContent ?? "");
/** What an input of the page holds. */
const valueOf = (page: Page, selector: string) => page.$eval(selector, (n) => (n as unknown as { value: string }).value);

/** Replaces what a field of the page holds with `value`, typed as a user would. */
async function fill(page: Page, selector: string, value: string): Promise<void> {
  await page.$eval(selector, (n) => {
    (n as unknown as { value: string }).value = "";
  });
  await page.type(selector, value);
}

/** The commit `payments` is at: a refused write leaves it where it was. */
const paymentsTip = (h: HttpHarness) => h.host.store.resolveRef(null, { kind: WORKFLOW_RUN_KIND, id: "payments" }, "refs/heads/main");

/** The scheduledFor of each backfill fire in run `reports`' log. */
async function backfillsOf(h: HttpHarness): Promise<unknown[]> {
  const page = await jsonOf(await h.request("/v1/deployments/payments/runs/reports/events?limit=1000"));
  expect(page.status).toBe(200);
  const events = page.body["events"] as { type: string; data: Record<string, unknown> }[];
  return events.filter((e) => e.type === "TimerFired" && e.data["backfill"] === true).map((e) => e.data["scheduledFor"]);
}

/** Opens the backfill form of the yearly series and sends it with these fields. */
async function backfillThroughPage(page: Page, fields: { from: string; to: string; maxTicks?: string }): Promise<void> {
  await page.click(`${ROW} button[data-action="backfill"]`);
  await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
  await fill(page, "#action-from", fields.from);
  await fill(page, "#action-to", fields.to);
  await fill(page, "#action-max-ticks", fields.maxTicks ?? "");
  await page.click("#action-confirm");
  // The status says the answer, no longer that the request is on its way.
  await page.waitForFunction(`!(document.getElementById("schedules-status")?.textContent ?? "").startsWith("Backfill:")`, { timeout: 10_000 });
}

async function seriesOnHost(h: HttpHarness): Promise<{ paused: boolean; pauseReason: string | null }> {
  const described = await jsonOf(await h.request(YEARLY));
  expect(described.status).toBe(200);
  return described.body as { paused: boolean; pauseReason: string | null };
}

describe("dashboard schedules", () => {
  it("lists each deployment's series and pauses with a reason, resumes and triggers one through the page, live", async () => {
    harness = await startHttpHarness(join(await tempDir(), "data"));
    const h = harness;
    expect((await h.request("/v1/deployments/payments/runs/reports/timers/yearly", json("PUT", { cron: "0 0 1 1 *", timezone: "Europe/Berlin" }))).status).toBe(200);
    expect((await h.request("/v1/deployments/shipping/runs/nightly-run_2/timers/hourly", json("PUT", { cron: "0 * * * *" }))).status).toBe(200);
    // A run id cannot hold markup: the API refuses it before anything is written.
    const bad = await jsonOf(await h.request("/v1/deployments/payments/runs/%3Cb%3Ex%3C%2Fb%3E/timers/t", json("PUT", { cron: "0 * * * *" })));
    expect([bad.status, bad.body["code"]]).toEqual([400, "id_invalid"]);

    const { page, errors } = await openPage(h, ADMIN_TOKEN);
    await page.waitForSelector(`${ROW}[data-state="running"]`, { timeout: 10_000 });
    await page.waitForFunction(`document.getElementById("live")?.textContent === "live"`, { timeout: 10_000 });
    const cells = await page.$$eval(`${ROW} td`, (tds) => tds.map((td) => td.textContent ?? ""));
    expect(cells.slice(0, 6)).toEqual(["payments", "reports", "yearly", "0 0 1 1 *", "Europe/Berlin", "running"]);
    // Next fires: 1 January 00:00 in Berlin is 31 December 23:00 UTC, five of them.
    expect(await page.$$eval(`${ROW} td:nth-child(7) li`, (lis) => lis.map((li) => li.textContent ?? ""))).toEqual(expect.arrayContaining([expect.stringMatching(/^\d{4}-12-31 23:00:00 UTC$/)]));
    expect(await page.$$eval(`${ROW} td:nth-child(7) li`, (lis) => lis.length)).toBe(5);
    expect(cells[7]).toBe("never");
    expect(await textOf(page, '#schedules tr[data-series="shipping/nightly-run_2/hourly"]')).toContain("0 * * * *");

    // A series set after the page loaded shows up without a reload.
    await h.request("/v1/deployments/shipping/runs/late/timers/daily", json("PUT", { cron: "0 6 * * *", timezone: "Asia/Tokyo" }));
    await page.waitForSelector('#schedules tr[data-series="shipping/late/daily"]', { timeout: 10_000 });

    // Pause with a reason holding markup: the page and the host both say paused, the reason as text.
    await page.click(`${ROW} button[data-action="pause"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    await page.type("#action-reason", HTML_REASON);
    await page.click("#action-confirm");
    await page.waitForSelector(`${ROW}[data-state="paused"]`, { timeout: 10_000 });
    expect(await textOf(page, ROW)).toContain(`reason: ${HTML_REASON}`);
    expect(await page.$$eval("#schedules img, #schedules b", (nodes) => nodes.length)).toBe(0);
    expect(await page.evaluate("typeof window.__injected")).toBe("undefined");
    expect(await textOf(page, "#schedules-status")).toBe("Paused yearly of run reports in payments.");
    expect(await seriesOnHost(h)).toMatchObject({ paused: true, pauseReason: HTML_REASON });
    await mkdir("test-results", { recursive: true });
    await page.screenshot({ path: "test-results/dashboard-schedules.png", fullPage: true });

    // A pause made by another client shows up live.
    expect((await h.request("/v1/deployments/shipping/runs/nightly-run_2/schedules/hourly/pause", json("POST", { reason: "from the CLI's neighbour" }))).status).toBe(200);
    await page.waitForSelector('#schedules tr[data-series="shipping/nightly-run_2/hourly"][data-state="paused"]', { timeout: 10_000 });

    // Resume through the page.
    await page.click(`${ROW} button[data-action="resume"]`);
    await page.waitForSelector(`${ROW}[data-state="running"]`, { timeout: 10_000 });
    expect(await textOf(page, ROW)).not.toContain("reason:");
    expect(await seriesOnHost(h)).toMatchObject({ paused: false, pauseReason: null });

    // Trigger now, after a confirmation: one manual fire, shown as the last fire.
    await page.click(`${ROW} button[data-action="trigger"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    expect(await page.$eval("#action-reason-field", (n) => n.hasAttribute("hidden"))).toBe(true);
    await page.click("#action-confirm");
    await page.waitForFunction(`(document.querySelector(${JSON.stringify(`${ROW} td:nth-child(8)`)})?.textContent ?? "").endsWith("(manual)")`, { timeout: 10_000 });
    const events = (await jsonOf(await h.request("/v1/deployments/payments/runs/reports/events?limit=1000"))).body["events"] as { type: string; data: Record<string, unknown> }[];
    const manual = events.filter((e) => e.type === "TimerFired" && e.data["manual"] === true);
    expect(manual).toHaveLength(1);
    expect(manual[0]!.data["requestId"]).toMatch(/^dashboard-[a-z0-9]+-[0-9a-f]{16}$/);

    expect(errors).toEqual([]);
  });

  it("backfills a past range through the page: the form prefilled, the count fired shown and those fires in the run's log; a refused range shows the route's message and writes nothing", async () => {
    harness = await startHttpHarness(join(await tempDir(), "data"));
    const h = harness;
    expect((await h.request("/v1/deployments/payments/runs/reports/timers/yearly", json("PUT", { cron: "0 0 1 1 *" }))).status).toBe(200);
    const { page, errors } = await openPage(h, ADMIN_TOKEN);
    await page.waitForSelector(`${ROW}[data-state="running"] button[data-action="backfill"]:not([disabled])`, { timeout: 10_000 });

    // The form: no fire yet, so from an hour before now to now, whole seconds, with an offset.
    const before = Date.now();
    await page.click(`${ROW} button[data-action="backfill"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    const after = Date.now();
    expect(await textOf(page, "#action-title")).toBe("Backfill a schedule");
    expect(await page.$eval("#action-reason-field", (n) => n.hasAttribute("hidden"))).toBe(true);
    expect(await page.$eval("#action-range-field", (n) => n.hasAttribute("hidden"))).toBe(false);
    const from = await valueOf(page, "#action-from");
    const to = await valueOf(page, "#action-to");
    expect([from, to]).toEqual([expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/), expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)]);
    expect(Date.parse(to)).toBeGreaterThanOrEqual(Math.floor(before / 1_000) * 1_000);
    expect(Date.parse(to)).toBeLessThanOrEqual(after);
    expect(Date.parse(to) - Date.parse(from)).toBe(3_600_000);
    expect(await valueOf(page, "#action-max-ticks")).toBe("");
    await page.click("#action-cancel");
    await page.waitForSelector("#action-dialog:not([open])", { timeout: 5_000 });

    // A range that ends before it starts: the route's message, nothing written.
    const tip = await paymentsTip(h);
    await backfillThroughPage(page, { from: "2025-01-01T00:00:00Z", to: "2024-01-01T00:00:00Z" });
    expect(await page.$eval("#schedules-status", (n) => n.classList.contains("error"))).toBe(true);
    expect(await textOf(page, "#schedules-status")).toMatch(
      /^Could not backfill yearly of run reports in payments: HTTP 400 time_invalid: backfill range 2025-01-01T00:00:00\.000Z \.\. 2024-01-01T00:00:00\.000Z is not a past range; allowed: from <= to <= now \(\S+Z\)$/,
    );
    // More slots than the max ticks typed: refused whole, the message naming where to split.
    await backfillThroughPage(page, { from: "2023-06-01T00:00:00+02:00", to: "2025-06-01T00:00:00Z", maxTicks: "1" });
    expect(await textOf(page, "#schedules-status")).toBe(
      "Could not backfill yearly of run reports in payments: HTTP 400 backfill_too_large: backfill of yearly from 2023-05-31T22:00:00.000Z to 2025-06-01T00:00:00.000Z covers 2 slots; allowed: at most 1 (nothing was written; the first 1 end at 2024-01-01T00:00:00.000Z: backfill to 2024-01-01T00:00:00.000Z, then from 2025-01-01T00:00:00.000Z)",
    );
    expect(await paymentsTip(h)).toBe(tip);
    expect(await backfillsOf(h)).toEqual([]);

    // The range with its two missed ticks: the count shown, both in the run's log, the last fire shown.
    await backfillThroughPage(page, { from: "2023-06-01T00:00:00+02:00", to: "2025-06-01T00:00:00Z" });
    expect(await page.$eval("#schedules-status", (n) => n.classList.contains("error"))).toBe(false);
    expect(await textOf(page, "#schedules-status")).toBe("Backfilled yearly of run reports in payments: 2 slots fired (2024-01-01 00:00:00 UTC … 2025-01-01 00:00:00 UTC).");
    expect(await backfillsOf(h)).toEqual(["2024-01-01T00:00:00.000Z", "2025-01-01T00:00:00.000Z"]);
    await page.waitForFunction(`(document.querySelector(${JSON.stringify(`${ROW} td:nth-child(8)`)})?.textContent ?? "").endsWith("(backfill)")`, { timeout: 10_000 });

    // The same range again fires nothing and says why.
    await backfillThroughPage(page, { from: "2023-06-01T00:00:00Z", to: "2025-06-01T00:00:00Z" });
    expect(await textOf(page, "#schedules-status")).toBe("yearly of run reports in payments: 0 slots fired, 2 had fired already: every slot in the range had fired already; nothing written.");
    expect(await backfillsOf(h)).toHaveLength(2);

    // The form now starts at the series' last tick.
    await page.click(`${ROW} button[data-action="backfill"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    expect(await valueOf(page, "#action-from")).toBe("2025-01-01T00:00:00Z");
    await page.click("#action-cancel");
    expect(errors).toEqual([]);
  });

  it("disables the controls and offers no backfill for a read-only token, and shows the 403 of a write refused after the token lost its right", async () => {
    // The token file's rights, with `payments`' write right taken from the billing token on demand.
    const file = parseTokenFile(TOKEN_FILE);
    let withdrawn = false;
    const tokens: TokenAuth = {
      authenticate: file.authenticate,
      authorize: (principal, repo, ref, action) => (withdrawn && action === "write" ? false : file.authorize(principal, repo, ref, action)),
      principals: file.principals,
    };
    harness = await startHttpHarness(join(await tempDir(), "data"), ["payments", "shipping"], { tokens });
    const h = harness;
    expect((await h.request("/v1/deployments/payments/runs/reports/timers/yearly", json("PUT", { cron: "0 0 1 1 *" }))).status).toBe(200);

    // Read-only: the series is listed, its controls are disabled and say why.
    const reader = await openPage(h, READER_TOKEN);
    await reader.page.waitForSelector(`${ROW}[data-state="running"]`, { timeout: 10_000 });
    expect(await reader.page.$$eval(`${ROW} button[data-action]`, (buttons) => buttons.map((b) => b.hasAttribute("disabled")))).toEqual([true, true]);
    expect(await textOf(reader.page, ROW)).toContain("read only");
    expect(await reader.page.$eval(`${ROW} button[data-action="pause"]`, (b) => b.getAttribute("title"))).toBe("This token may only read payments");
    expect(await reader.page.$$(`${ROW} button[data-action="backfill"]`)).toHaveLength(0);
    expect(await reader.page.$$("#schedules button[data-action=\"backfill\"]")).toHaveLength(0);
    expect(reader.errors).toEqual([]);
    await browser?.close();
    browser = null;

    // A token that may write, whose right is taken away while the page is open: the 403 is shown.
    const { page, errors } = await openPage(h, PAYMENTS_TOKEN);
    await page.waitForSelector(`${ROW}[data-state="running"] button[data-action="pause"]:not([disabled])`, { timeout: 10_000 });
    expect(await page.$$(`${ROW} button[data-action="backfill"]:not([disabled])`)).toHaveLength(1);
    withdrawn = true;
    await page.click(`${ROW} button[data-action="pause"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    await page.type("#action-reason", "freeze");
    await page.click("#action-confirm");
    await page.waitForSelector("#schedules-status.error", { timeout: 10_000 });
    expect(await textOf(page, "#schedules-status")).toBe("Could not pause yearly of run reports in payments: HTTP 403 authorize_denied: this token may not write deployment payments");
    // The list read again: the controls are now disabled, the series still running on the host.
    await page.waitForSelector(`${ROW} button[data-action="pause"][disabled]`, { timeout: 10_000 });
    expect(await page.$$(`${ROW} button[data-action="backfill"]`)).toHaveLength(0);
    expect(await page.$eval(`${ROW}`, (n) => n.getAttribute("data-state"))).toBe("running");
    expect(await seriesOnHost(h)).toMatchObject({ paused: false });
    expect(errors).toEqual([]);
  });
});
