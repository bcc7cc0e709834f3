/**
 * `/metrics` is valid Prometheus text exposition (parsed line by line against the format's
 * grammar), its labels are bounded, and the lateness histogram counts exactly the fires.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { startHttpHarness, type HttpHarness } from "./http-harness.js";

const tempDir = useTempDirs("wh-http-metrics-");
let harness: HttpHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Parses the text format 0.0.4: HELP/TYPE comments, then `name{label="value",…} number`. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sampleLine = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (-?[0-9.e+-]+|\\+Inf|-Inf|NaN)$`);
  const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(,|$)/y;
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment !== null) {
      if (comment[1] === "TYPE") {
        expect(["counter", "gauge", "histogram", "summary", "untyped"]).toContain(comment[3]);
        types.set(comment[2] as string, comment[3] as string);
      }
      continue;
    }
    const match = sampleLine.exec(line);
    expect(match, `not a sample line: ${line}`).not.toBeNull();
    const labels: Record<string, string> = {};
    const body = match?.[2] ?? "";
    labelPair.lastIndex = 0;
    while (labelPair.lastIndex < body.length) {
      const pair = labelPair.exec(body);
      expect(pair, `bad labels in: ${line}`).not.toBeNull();
      labels[pair?.[1] as string] = pair?.[2] as string;
    }
    const family = [...types.keys()].find((n) => match?.[1] === n || (types.get(n) === "histogram" && /^(.*)_(bucket|sum|count)$/.exec(match?.[1] as string)?.[1] === n));
    expect(family, `sample before its TYPE: ${line}`).toBeDefined();
    samples.push({ name: match?.[1] as string, labels, value: Number(match?.[3]) });
  }
  return { types, samples };
}

const sum = (samples: readonly Sample[], name: string): number => samples.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);

describe("/metrics", () => {
  it("is valid exposition text whose lateness histogram counts exactly the fires", async () => {
    harness = await startHttpHarness(join(await tempDir(), "data"));
    const h = harness;
    const runs = ["a", "b", "c", "d"];
    const fired = new Set<string>();
    const allFired = new Promise<void>((resolve) => {
      const stop = h.monitor.subscribe((event) => {
        if (event.type !== "fired") return;
        fired.add(event.fire.runId);
        if (fired.size === runs.length) {
          stop();
          resolve();
        }
      });
    });
    for (const run of runs) {
      const set = await h.request(`/v1/deployments/payments/runs/${run}/timers/t`, { method: "PUT", body: JSON.stringify({ delayMs: 20 }), headers: { "content-type": "application/json" } });
      expect(set.status).toBe(200);
    }
    // Armed in the scheduler's queue (what the gauge counts) once the scheduler reports it.
    await h.nextEvent(
      (e) => e.type === "armed" && e.repoId === "shipping",
      () => h.request("/v1/deployments/shipping/runs/later/timers/t", { method: "PUT", body: JSON.stringify({ delayMs: 3_600_000 }), headers: { "content-type": "application/json" } }),
    );
    await h.request("/v1/deployments/payments/runs/a/signals", { method: "POST", body: JSON.stringify({ signalName: "go", signalId: "g1" }), headers: { "content-type": "application/json" } });
    await allFired;

    const response = await h.request("/metrics");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const { types, samples } = parseExposition(await response.text());

    expect(types.get("workflow_host_fire_lateness_seconds")).toBe("histogram");
    expect(types.get("workflow_host_commit_duration_seconds")).toBe("histogram");
    for (const name of ["timer_fires_total", "skipped_ticks_total", "timer_cancellations_total", "commit_failures_total", "bad_events_total", "signal_deliveries_total", "http_requests_total"]) {
      expect(types.get(`workflow_host_${name}`), name).toBe("counter");
    }
    expect(types.get("workflow_host_pending_timers")).toBe("gauge");

    const fires = sum(samples, "workflow_host_timer_fires_total");
    expect(fires).toBe(runs.length);
    expect(sum(samples, "workflow_host_fire_lateness_seconds_count")).toBe(fires);
    const inf = samples.find((s) => s.name === "workflow_host_fire_lateness_seconds_bucket" && s.labels["le"] === "+Inf");
    expect(inf?.value).toBe(fires);
    expect(samples.find((s) => s.name === "workflow_host_pending_timers" && s.labels["deployment"] === "shipping")?.value).toBe(1);
    expect(samples.find((s) => s.name === "workflow_host_signal_deliveries_total")?.labels).toEqual({ deployment: "payments", outcome: "delivered" });
    expect(samples.some((s) => s.name === "workflow_host_http_requests_total" && s.labels["route"] === "/v1/deployments/:repoId/runs/:runId/timers/:timerId" && s.labels["status"] === "200")).toBe(true);

    // Bounded labels: never a run or timer id.
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    expect([...labelNames].sort()).toEqual(["deployment", "le", "method", "outcome", "route", "source", "state", "status"].filter((l) => labelNames.has(l)));
    expect(samples.filter((s) => s.name === "workflow_host_http_heavy_reads").map((s) => s.labels["state"]).sort()).toEqual(["running", "waiting"]);
    for (const s of samples) for (const v of Object.values(s.labels)) expect(runs).not.toContain(v);
  });
});
