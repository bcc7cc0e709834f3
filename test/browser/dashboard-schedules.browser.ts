/**
 * The dashboard's schedules in a real headless Chromium (the system's `chromium`, driven by
 * puppeteer-core) against a real host over loopback: each deployment's series listed (run, timer,
 * cron, zone, state, next fires, last fire); pause with a reason, then resume, through the page's
 * controls, the state shown changing and the host holding it; trigger now; a pause made by another
 * client shown live; a reason holding HTML shown as text; controls disabled for a read-only
 * token, and a write refused after the token lost its right shown with the route's 403. A
 * screenshot is written to test-results/dashboard-schedules.png.
 */
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterEach, describe, expect, it } from "vitest";
import type { TokenAuth } from "../../src/http/http-tokens.js";
import { parseTokenFile } from "../../src/http/http-tokens.js";
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
    // A refused request is logged by the browser itself; the page shows it (asserted below).
    if (message.type() === "error" && !message.text().includes("status of 403")) errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`${h.baseUrl}/#token=${token}`, { waitUntil: "load" });
  return { page, errors };
}

const textOf = (page: Page, selector: string) => page.$eval(selector, (n) => n.textContent ?? "");

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

  it("disables the controls for a read-only token, and shows the 403 of a write refused after the token lost its right", async () => {
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
    expect(reader.errors).toEqual([]);
    await browser?.close();
    browser = null;

    // A token that may write, whose right is taken away while the page is open: the 403 is shown.
    const { page, errors } = await openPage(h, PAYMENTS_TOKEN);
    await page.waitForSelector(`${ROW}[data-state="running"] button[data-action="pause"]:not([disabled])`, { timeout: 10_000 });
    withdrawn = true;
    await page.click(`${ROW} button[data-action="pause"]`);
    await page.waitForSelector("#action-dialog[open]", { timeout: 5_000 });
    await page.type("#action-reason", "freeze");
    await page.click("#action-confirm");
    await page.waitForSelector("#schedules-status.error", { timeout: 10_000 });
    expect(await textOf(page, "#schedules-status")).toBe("Could not pause yearly of run reports in payments: HTTP 403 authorize_denied: this token may not write deployment payments");
    // The list read again: the controls are now disabled, the series still running on the host.
    await page.waitForSelector(`${ROW} button[data-action="pause"][disabled]`, { timeout: 10_000 });
    expect(await page.$eval(`${ROW}`, (n) => n.getAttribute("data-state"))).toBe("running");
    expect(await seriesOnHost(h)).toMatchObject({ paused: false });
    expect(errors).toEqual([]);
  });
});
