/**
 * The dashboard in a real headless Chromium (the system's `chromium` package, driven by
 * puppeteer-core): it shows a pending timer, shows the timer as fired with its lateness without
 * a reload once the host fires it, opens the run's log, pages through a long run's log a page at a
 * time, and logs no console error. A screenshot
 * is written to test-results/dashboard.png. A run whose folder is lost is named under the
 * pending timers.
 */
import { existsSync } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import puppeteer, { type Browser } from "puppeteer-core";
import { afterEach, describe, expect, it } from "vitest";
import { buildFixtureRepo } from "../../src/testing/fixture-repo.js";
import { GitWriter, SOON, started, timerSet, usePlumbingDeployments } from "../helpers/plumbing-deployment.js";
import { useTempDirs } from "../helpers/temp-dir.js";
import { ADMIN_TOKEN, startHttpHarness, type HttpHarness } from "../integration/http/http-harness.js";

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium";
const tempDir = useTempDirs("wh-browser-");
const plumbing = usePlumbingDeployments(tempDir, (gitdir) => new GitWriter(gitdir));
let harness: HttpHarness | null = null;
let browser: Browser | null = null;
afterEach(async () => {
  await browser?.close();
  browser = null;
  await harness?.close();
  harness = null;
});

const put = (h: HttpHarness, path: string, body: unknown) => h.request(path, { method: "PUT", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

describe("dashboard", () => {
  it("shows a pending timer, then fired with its lateness without a reload, and a run's log", async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} (apt-get install chromium)`).toBe(true);
    harness = await startHttpHarness(join(await tempDir(), "data"));
    const h = harness;
    // Something to look at: earlier fires, a cron series, a signal.
    const warmUp = ["invoice-1", "invoice-2", "invoice-3"];
    let seen = 0;
    const warmed = new Promise<void>((resolve) => {
      const stop = h.monitor.subscribe((e) => {
        if (e.type === "fired" && warmUp.includes(e.fire.runId) && ++seen === warmUp.length) {
          stop();
          resolve();
        }
      });
    });
    for (const run of warmUp) expect((await put(h, `/v1/deployments/payments/runs/${run}/timers/due`, { delayMs: 10 })).status).toBe(200);
    await warmed;
    await put(h, "/v1/deployments/shipping/runs/reports/timers/nightly", { cron: "0 2 * * *", timezone: "Europe/Berlin" });
    await put(h, "/v1/deployments/payments/runs/order-17/timers/reminder", { fireAt: new Date(Date.now() + 3_600_000).toISOString() });
    await h.request("/v1/deployments/payments/runs/order-17/signals", { method: "POST", body: JSON.stringify({ signalName: "approve", signalId: "approval-17", payload: { by: "ana" } }), headers: { "content-type": "application/json" } });

    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1100 });
    const consoleErrors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    let navigations = 0;
    page.on("framenavigated", (frame) => {
      if (frame === page.mainFrame()) navigations += 1;
    });

    await page.goto(`${h.baseUrl}/#token=${ADMIN_TOKEN}`, { waitUntil: "load" });
    const row = 'tr[data-timer="payments/order-17/reminder"]';
    await page.waitForSelector(`#timers ${row}[data-status="pending"]`, { timeout: 10_000 });
    await page.waitForFunction(`document.getElementById("live")?.textContent === "live"`, { timeout: 10_000 });
    await page.waitForSelector('#schedules tr[data-series="shipping/reports/nightly"]', { timeout: 10_000 });
    expect(await page.$eval("#schedules", (n) => n.textContent)).toContain("0 2 * * *");
    const navigationsBefore = navigations;

    // Reschedule the timer to fire now; the page must show it fired, with its lateness, within 2 s.
    const fired = await h.nextEvent(
      (e) => e.type === "fired" && e.fire.runId === "order-17",
      () => put(h, "/v1/deployments/payments/runs/order-17/timers/reminder", { fireAt: new Date(Date.now() + 300).toISOString() }),
    );
    expect(fired.type).toBe("fired");
    await page.waitForSelector(`#timers ${row}[data-status="fired"]`, { timeout: 2_000 });
    const status = await page.$eval(`#timers ${row}`, (n) => n.textContent ?? "");
    expect(status).toMatch(/fired, \d+(\.\d)? (ms|s|min) late/);
    expect(await page.$eval("#fires", (n) => n.textContent ?? "")).toContain("order-17");
    expect(navigations).toBe(navigationsBefore);

    // Open the run's log from its row.
    await page.click(`#timers ${row} button.run-link`);
    await page.waitForSelector("#run-log:not([hidden]) #run-events tr", { timeout: 5_000 });
    const types = await page.$$eval("#run-events tr td:nth-child(2)", (cells) => cells.map((c) => c.textContent));
    expect(types).toEqual(["TimerSet", "SignalReceived", "TimerSet", "TimerFired"]);
    expect(await page.$eval("#run-more", (n) => n.hasAttribute("hidden"))).toBe(true);
    await mkdir("test-results", { recursive: true });
    await page.screenshot({ path: "test-results/dashboard.png", fullPage: true });

    // A long run: the first page, then the next ones on request, never the whole log at once.
    const long: Record<string, object> = {};
    for (let seq = 1; seq <= 250; seq += 1) long[`runs/long-run/events/${seq}.json`] = { seq, type: "StepDone", n: seq };
    await buildFixtureRepo(h.host.store, "payments", long);
    await page.click("#run-id", { count: 3 });
    await page.type("#run-id", "long-run");
    await page.select("#run-deployment", "payments");
    await page.click("#run-search button[type=submit]");
    const rows = () => page.$$eval("#run-events tr", (r) => r.length);
    await page.waitForFunction(`document.querySelectorAll("#run-events tr").length === 100 && !document.getElementById("run-more").hidden`, { timeout: 5_000 });
    expect(await page.$eval("#run-caption", (n) => n.textContent ?? "")).toContain("250 events");
    await page.click("#run-more");
    await page.waitForFunction(`document.querySelectorAll("#run-events tr").length === 200`, { timeout: 5_000 });
    await page.click("#run-more");
    await page.waitForFunction(`document.querySelectorAll("#run-events tr").length === 250 && document.getElementById("run-more").hidden`, { timeout: 5_000 });
    expect(await page.$$eval("#run-events tr td:first-child", (cells) => cells.map((c) => Number(c.textContent)))).toEqual(Array.from({ length: 250 }, (_, i) => i + 1));
    expect(await rows()).toBe(250);

    expect(consoleErrors).toEqual([]);
  });

  it("names a run whose folder cannot be read under the pending timers, and lists the other runs' timers", async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} (apt-get install chromium)`).toBe(true);
    const d = await plumbing();
    const ok = await d.w.run([started(), timerSet(2, "t", SOON), timerSet(3, "later", "2099-01-01T00:00:00.000Z")]);
    const lost = await d.w.run([started(), timerSet(2, "u", "2099-01-01T00:00:00.000Z")]);
    await d.w.commit({ "r-ok": ok.tree, "r-lost": lost.tree });
    await rm(join(d.w.gitdir, "objects", lost.tree.slice(0, 2), lost.tree.slice(2)));
    await d.store.close();
    harness = await startHttpHarness(d.dataDir, []);
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    const page = await browser.newPage();
    const consoleErrors: string[] = [];
    page.on("pageerror", (error) => consoleErrors.push(String(error)));
    await page.goto(`${harness.baseUrl}/#token=${ADMIN_TOKEN}`, { waitUntil: "load" });
    await page.waitForSelector('#timers tr[data-timer="d/r-ok/later"]', { timeout: 10_000 });
    await page.waitForSelector("#timers-unreadable:not([hidden])", { timeout: 10_000 });
    expect(await page.$eval("#timers-unreadable", (n) => n.textContent ?? "")).toContain("d/r-lost (object_missing at runs/r-lost)");
    expect(consoleErrors).toEqual([]);
  });
});
