import { afterEach, describe, expect, it } from "vitest";
import { createWorkflowHost, type WorkflowHost, type WorkflowHostOptions } from "../../../src/host/host.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { expectCode } from "../../helpers/expect-code.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs } from "../../helpers/memfs.js";

const hosts: WorkflowHost[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop()));
});

function makeHost(extra: Partial<WorkflowHostOptions> = {}): WorkflowHost {
  const clock = createFakeClock("2026-05-01T10:00:00.000Z");
  const host = createWorkflowHost({ dataDir: "/data", fs: createMemFs(), clock: clock.clock, timers: clock.timers, watch: false, lock: { timers: createManualTimers() }, ...extra });
  hosts.push(host);
  return host;
}

describe("the host's channel cache", () => {
  it("keeps at most maxChannels idle channels, dropping the least recently used, and never one with a waiter", async () => {
    const host = makeHost({ maxChannels: 2 });
    await host.start();
    await host.createDeployment("dep");
    const waited = host.channel("dep", "r0");
    const abort = new AbortController();
    const pending = waited.awaitNext("go", abort.signal).catch((error: unknown) => error);
    const first = host.channel("dep", "r1");
    expect(host.channel("dep", "r1")).toBe(first);
    host.channel("dep", "r2");
    host.channel("dep", "r3");
    // r1 was the least recently used channel nobody waited on: it was stopped and is made anew.
    await expect(first.deliver("go", null)).rejects.toMatchObject({ code: "channel_stopped" });
    expect(host.channel("dep", "r1")).not.toBe(first);
    // r0 has a waiter: kept, and still the same instance.
    expect(host.channel("dep", "r0")).toBe(waited);
    abort.abort();
    await pending;
  });

  it("refuses a maxChannels below 1 with config_invalid", () => {
    expectCode(() => makeHost({ maxChannels: 0 }), "config_invalid");
  });
});
