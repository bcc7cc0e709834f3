/**
 * A cron series paused or resumed is a live event (`paused`, `resumed` on `GET /v1/events`)
 * whoever wrote it: the HTTP face, or the CLI on the same data dir while the host serves it
 * (the dashboard's Schedules panel follows them; before, a CLI pause reached the page only with
 * the deployment's next other event). One event per change of state: a pause of a paused series
 * writes nothing and says nothing. A real host on a loopback port and the real CLI.
 */
import { describe, expect, it } from "vitest";
import type { LiveEvent } from "../../../src/http/host-monitor.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { runCliProcess } from "../host/cli-child.js";
import { useHttpHarness, type HttpHarness } from "./http-harness.js";

const start = useHttpHarness("wh-http-schedule-live-");

const json = (method: string, body: unknown): RequestInit => ({ method, body: JSON.stringify(body), headers: { "content-type": "application/json" } });

/** The live events of `h` whose type is paused or resumed, from now on. */
function pauseEvents(h: HttpHarness): LiveEvent[] {
  const seen: LiveEvent[] = [];
  h.monitor.subscribe((event) => {
    if (event.type === "paused" || event.type === "resumed") seen.push(event);
  });
  return seen;
}

describe("pauses and resumes are live events", () => {
  it("from the CLI on the same data dir, and from the HTTP face: one per change of state, with the reason", async () => {
    const h = await start();
    expect((await h.request("/v1/deployments/payments/runs/nightly/timers/hourly", json("PUT", { cron: "0 * * * *", timezone: "UTC" }))).status).toBe(200);
    const seen = pauseEvents(h);
    const dataDir = h.host.store.dataDir;
    const poke = (): void => h.host.store.poke({ kind: WORKFLOW_RUN_KIND, id: "payments" });

    const cliPause = await h.nextEvent(
      (e) => e.type === "paused",
      async () => {
        const out = await runCliProcess(["schedule", "pause", "-d", dataDir, "-r", "payments", "--run", "nightly", "-t", "hourly", "--reason", "warehouse <migration>"]);
        expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: "" });
        poke();
      },
    );
    expect(cliPause).toEqual({ type: "paused", repoId: "payments", runId: "nightly", timerId: "hourly", reason: "warehouse <migration>" });

    // A second pause writes nothing: no event (the resume below is the next one seen).
    expect(((await (await h.request("/v1/deployments/payments/runs/nightly/schedules/hourly/pause", json("POST", {}))).json()) as { outcome: string }).outcome).toBe("already_paused");
    const httpResume = await h.nextEvent(
      (e) => e.type === "resumed",
      async () => {
        expect((await h.request("/v1/deployments/payments/runs/nightly/schedules/hourly/resume", json("POST", {}))).status).toBe(200);
      },
    );
    expect(httpResume).toEqual({ type: "resumed", repoId: "payments", runId: "nightly", timerId: "hourly" });

    await h.nextEvent(
      (e) => e.type === "paused",
      async () => {
        expect((await h.request("/v1/deployments/payments/runs/nightly/schedules/hourly/pause", json("POST", {}))).status).toBe(200);
      },
    );
    const cliResume = await h.nextEvent(
      (e) => e.type === "resumed",
      async () => {
        const out = await runCliProcess(["schedule", "resume", "-d", dataDir, "-r", "payments", "--run", "nightly", "-t", "hourly"]);
        expect(out.code).toBe(0);
        poke();
      },
    );
    expect(cliResume).toEqual({ type: "resumed", repoId: "payments", runId: "nightly", timerId: "hourly" });
    expect(seen.map((e) => e.type)).toEqual(["paused", "resumed", "paused", "resumed"]);
  }, 120_000);
});
