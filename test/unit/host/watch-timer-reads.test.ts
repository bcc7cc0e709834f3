/**
 * Waiting for a timer of a long run reads the run's log once per version of the run, not once
 * per wait: the run's summary says whether the timer is armed, and a timer that already fired
 * is folded from the log streamed, with the same answers as before.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunEventFeed } from "../../../seams/signals/run-event-feed.js";
import { watchTimer, type WatchTimerContext } from "../../../src/host/watch-timer.js";
import { DEFAULT_REF } from "../../../src/substrate/ref-name.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { createMemoryRepoStore, type MemoryRepoStore } from "../../../src/testing/memory-store.js";
import { DEFAULT_MAX_EVENT_BYTES } from "../../../src/workflow/events.js";
import { countingReads } from "../../helpers/counting-reads.js";

let opened: MemoryRepoStore | null = null;
afterEach(async () => {
  await opened?.store.close();
  opened = null;
});

/** What the waits read: folders listed under events/, folders read as bytes, blobs. */
const read = { listed: 0, treeBytes: 0, blobs: 0 };

function counting(reads: CommittedReads): CommittedReads {
  return countingReads(reads, {
    listed: (path) => {
      if (path.endsWith("/events")) read.listed += 1;
    },
    blobs: (count) => {
      read.blobs += count;
    },
    treeBytes: () => {
      read.treeBytes += 1;
    },
  });
}

/** A feed that hands over nothing (the log at the tip is all there is). */
const quietFeed = { repoId: "dep", attach: async () => ({ from: null, detach: async () => undefined }) } as unknown as RunEventFeed;

async function contextFor(files: Record<string, object>): Promise<WatchTimerContext> {
  opened = createMemoryRepoStore();
  await buildFixtureRepo(opened.store, "dep", files);
  const base = opened.store;
  const store = Object.create(base) as RepoStore;
  store.openCommittedReads = async (...args: Parameters<RepoStore["openCommittedReads"]>) => counting(await base.openCommittedReads(...args));
  return { feed: quietFeed, store, principal: null, repoId: "dep", ref: DEFAULT_REF, maxEventBytes: DEFAULT_MAX_EVENT_BYTES };
}

/** A run `long` of `n` events: a timer `t` armed at seq 1, then steps. */
function longRun(n: number, extra: Record<string, object> = {}): Record<string, object> {
  const files: Record<string, object> = { "runs/long/events/1.json": { seq: 1, type: "TimerSet", data: { timerId: "t", fireAt: "2099-01-01T00:00:00.000Z" } } };
  for (let seq = 2; seq <= n; seq += 1) files[`runs/long/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
  return { ...files, ...extra };
}

async function abortedWait(ctx: WatchTimerContext): Promise<string> {
  const stop = new AbortController();
  const waiting = watchTimer(ctx, "long", "t", stop.signal).then(
    () => "fired",
    (error: { code?: string }) => error.code ?? String(error),
  );
  // Stopped once it has started: it still reads the tip before it looks at the signal again.
  stop.abort();
  return waiting;
}

describe("watchTimer on a long run", () => {
  it("reads nothing of an unchanged run's events/ for a second wait", async () => {
    const ctx = await contextFor(longRun(400));
    expect(await abortedWait(ctx)).toBe("aborted");
    Object.assign(read, { listed: 0, treeBytes: 0, blobs: 0 });
    expect(await abortedWait(ctx)).toBe("aborted");
    expect(read).toEqual({ listed: 0, treeBytes: 0, blobs: 0 });
  });

  it("answers a timer that fired, was cancelled or whose run ended from the log, as before", async () => {
    const fired = await contextFor(longRun(50, { "runs/long/events/51.json": { seq: 51, type: "TimerFired", data: { timerId: "t", scheduledFor: "2099-01-01T00:00:00.000Z", firedAt: "2099-01-01T00:00:01.000Z" } } }));
    expect(await watchTimer(fired, "long", "t")).toEqual({ timerId: "t", scheduledFor: "2099-01-01T00:00:00.000Z", firedAt: "2099-01-01T00:00:01.000Z", seq: 51 });
    await opened?.store.close();
    const cancelled = await contextFor(longRun(50, { "runs/long/events/51.json": { seq: 51, type: "TimerCancelled", data: { timerId: "t" } } }));
    await expect(watchTimer(cancelled, "long", "t")).rejects.toMatchObject({ code: "timer_not_found", data: { status: "cancelled" } });
    await opened?.store.close();
    const ended = await contextFor(longRun(50, { "runs/long/events/51.json": { seq: 51, type: "RunCompleted" } }));
    await expect(watchTimer(ended, "long", "t")).rejects.toMatchObject({ code: "timer_not_found", data: { status: "ended" } });
  });
});
