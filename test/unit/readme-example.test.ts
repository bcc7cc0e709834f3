/**
 * The README's "Testing your workflows" example, with the package imports pointed at the
 * sources: if this fails, the README shows code that does not work.
 */
import { expect, it } from "vitest";
import { createWorkflowHost } from "../../src/index.js";
import { buildFixtureRepo, createFakeClock, createMemoryRepoStore } from "../../src/testing/index.js";

it("fires an overdue one-shot once on recovery, and not again after a restart", async () => {
  const clock = createFakeClock("2026-05-01T09:00:00Z");
  const { store, fs, dataDir } = createMemoryRepoStore({ clock: clock.clock });
  await buildFixtureRepo(store, "billing", "fixtures/overdue-one-shots");
  await store.close();

  const boot = () => createWorkflowHost({ dataDir, fs, clock: clock.clock, timers: clock.timers, watch: false });
  const host = boot();
  await host.start();
  const firing = host.runtime("billing").waitForTimer("invoice-7", "send-invoice");
  await clock.advance(0);
  expect((await firing).scheduledFor).toBe("2026-05-01T00:00:00.000Z");
  await host.stop();

  const restarted = boot();
  await restarted.start();
  await clock.advance(60_000);
  expect(restarted.scheduler.stats().fired).toBe(0);
  await restarted.stop();
});
