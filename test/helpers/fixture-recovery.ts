/**
 * The recovery scenario every fixture deployment goes through, on whatever store the caller
 * opened (memfs in unit tests, real disk in integration tests), compared step by step with the
 * fixture's manifest:
 *
 * 1. build the repo from the folder; start a scheduler at the manifest's `now`;
 * 2. recovery report, bad events (onEvent and stats) and the queue as `start()` left it;
 * 3. let the due timers run (`advance(0)`): what fired or was skipped, in how many commits,
 *    and what stays queued;
 * 4. restart: the tip does not move, nothing fires twice, the same queue comes back;
 * 5. run on to `later.until`: what fires, each exactly at its scheduledFor, and what stays;
 * 6. at the end: no TimerFired for `neverFire` timers, no tick fired twice, every fixture file
 *    unchanged, and `cancelTimer` answers as listed without committing.
 */
import { expect } from "vitest";
import type { SchedulerEvent } from "../../seams/scheduler/scheduler-types.js";
import type { RepoStore } from "../../src/substrate/types.js";
import type { FakeClock } from "../../src/testing/fake-clock.js";
import { buildFixtureRepo, readFixtureFolder } from "../../src/testing/fixture-repo.js";
import type { RunLog } from "../../src/workflow/run-log.js";
import type { RunEvent } from "../../src/workflow/types.js";
import type { ExpectedFired, FixtureCase } from "./fixture-cases.js";
import { makeScheduler, queueOf, readRepoLogs, repoIdOf, runUntil, sortQueue, waitForCaughtUp, type RunningScheduler } from "./fixture-scheduler.js";

export interface FixtureRecoveryResult {
  /** The commit `buildFixtureRepo` made. */
  readonly fixtureSha: string;
  /** The tip after the whole scenario. */
  readonly tipSha: string;
}

interface Located {
  readonly runId: string;
  readonly event: RunEvent;
}

/**
 * Runs the scenario above for one fixture and asserts every step with vitest's `expect`.
 * @param store a store with the workflow-run kind whose commit clock is `clock`
 * @param clock a FakeClock at the manifest's `now`
 */
export async function checkFixtureRecovery(fixture: FixtureCase, store: RepoStore, clock: FakeClock): Promise<FixtureRecoveryResult> {
  const repoId = fixture.name;
  const want = fixture.manifest.expect;
  const nowIso = new Date(clock.now()).toISOString();
  expect(nowIso).toBe(new Date(fixture.manifest.now).toISOString());
  const fixtureSha = await buildFixtureRepo(store, repoId, fixture.folder);
  const files = await readFixtureFolder(fixture.folder);
  const tip = async (): Promise<string | null> => store.resolveRef(null, repoIdOf(repoId), "refs/heads/main");
  expect(await tip()).toBe(fixtureSha);

  // 1–2. Recovery at `now`.
  const first = makeScheduler(store, clock);
  await first.scheduler.start();
  expect(first.events.filter((e) => e.type === "recovered")).toEqual([
    expect.objectContaining({ type: "recovered", repoId, commitSha: fixtureSha, ...want.recovered }),
  ]);
  expectBadEvents(first, want.badEvents);
  expect(queueOf(first.scheduler, repoId)).toEqual(sortQueue(want.armedAtStart));

  // 3. The timers due at `now` run.
  await clock.advance(0);
  await waitForCaughtUp(first.scheduler, store, repoId);
  const afterRecovery = await readRepoLogs(store, repoId);
  const recoveryEvents = eventsAddedSince(afterRecovery, (runId, seq) => files.has(`runs/${runId}/events/${seq}.json`));
  const firedAtRecovery = firedOf(recoveryEvents);
  for (const fire of firedAtRecovery) expect(fire.firedAt).toBe(nowIso);
  expect(sortFired(firedAtRecovery.map(withoutFiredAt))).toEqual(sortFired(want.firedAtRecovery));
  expect(sortFired(skippedOf(recoveryEvents))).toEqual(sortFired(want.skippedAtRecovery));
  expect(first.scheduler.stats().commits).toBe(want.recoveryCommits);
  expect(queueOf(first.scheduler, repoId)).toEqual(sortQueue(want.pendingAfterRecovery));

  // 4. A restart finds nothing left to do at `now`.
  const tipAfterRecovery = await tip();
  await first.scheduler.stop();
  const second = makeScheduler(store, clock);
  await second.scheduler.start();
  await clock.advance(0);
  await waitForCaughtUp(second.scheduler, store, repoId);
  expect(await tip()).toBe(tipAfterRecovery);
  expect(second.events.filter((e) => e.type === "fired" || e.type === "skipped")).toEqual([]);
  expect(second.events.find((e) => e.type === "recovered")).toMatchObject({ commitSha: tipAfterRecovery, badEvents: want.badEvents.length });
  expectBadEvents(second, want.badEvents);
  expect(queueOf(second.scheduler, repoId)).toEqual(sortQueue(want.pendingAfterRecovery));

  // 5. Running on: each timer fires exactly at its scheduledFor.
  await runUntil(second, store, repoId, clock, Date.parse(want.later.until));
  const final = await readRepoLogs(store, repoId);
  const laterEvents = eventsAddedSince(final, (runId, seq) => afterRecovery.get(runId)?.events.some((e) => e.seq === seq) === true || files.has(`runs/${runId}/events/${seq}.json`));
  const firedLater = firedOf(laterEvents);
  for (const fire of firedLater) expect(fire.firedAt).toBe(fire.scheduledFor);
  expect(sortFired(firedLater.map(withoutFiredAt))).toEqual(sortFired(want.later.fired));
  expect(queueOf(second.scheduler, repoId)).toEqual(sortQueue(want.later.pending));

  // 6. End state.
  const fixtureLogs = fixtureEventsByRun(final, files);
  for (const { runId, timerId } of want.neverFire) {
    const count = (events: readonly RunEvent[]): number => events.filter((e) => e.type === "TimerFired" && timerOf(e) === timerId).length;
    expect({ runId, timerId, fired: count(final.get(runId)?.events ?? []) }).toEqual({ runId, timerId, fired: count(fixtureLogs.get(runId) ?? []) });
  }
  expectNoTickFiredTwice(final);
  const reads = await store.openCommittedReads(null, repoIdOf(repoId), "refs/heads/main");
  for (const [path, bytes] of files) expect({ path, bytes: await reads.readBlob(path) }).toEqual({ path, bytes });

  const tipBeforeCancels = await tip();
  for (const { runId, timerId, outcome } of want.cancelOutcomes) {
    expect({ runId, timerId, ...(await second.scheduler.cancelTimer(repoId, runId, timerId)) }).toEqual({ runId, timerId, outcome, commitSha: null });
  }
  expect(await tip()).toBe(tipBeforeCancels);
  await second.scheduler.stop();
  return { fixtureSha, tipSha: tipBeforeCancels as string };
}

function expectBadEvents(run: RunningScheduler, expected: FixtureCase["manifest"]["expect"]["badEvents"]): void {
  const byPath = <T extends { path: string }>(list: readonly T[]): T[] => [...list].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const reported = run.events
    .filter((e): e is Extract<SchedulerEvent, { type: "bad_event" }> => e.type === "bad_event")
    .map((e) => ({ runId: e.runId, path: e.path, seq: e.seq, code: e.error.code }));
  expect(byPath(reported)).toEqual(byPath(expected));
  const stats = run.scheduler.stats();
  expect(stats.badEvents).toBe(expected.length);
  expect(byPath(stats.recentBadEvents.map(({ path, seq, code }) => ({ path, seq, code })))).toEqual(byPath(expected.map(({ path, seq, code }) => ({ path, seq, code }))));
}

/** Events of `logs` that `known` does not claim, with their run. */
function eventsAddedSince(logs: ReadonlyMap<string, RunLog>, known: (runId: string, seq: number) => boolean): Located[] {
  const out: Located[] = [];
  for (const [runId, log] of logs) for (const event of log.events) if (!known(runId, event.seq)) out.push({ runId, event });
  return out;
}

function fixtureEventsByRun(logs: ReadonlyMap<string, RunLog>, files: ReadonlyMap<string, Uint8Array>): Map<string, RunEvent[]> {
  const out = new Map<string, RunEvent[]>();
  for (const [runId, log] of logs) out.set(runId, log.events.filter((e) => files.has(`runs/${runId}/events/${e.seq}.json`)));
  return out;
}

function timerOf(event: RunEvent): string | undefined {
  return (event as { data?: { timerId?: string } }).data?.timerId;
}

function firedOf(events: readonly Located[]): (ExpectedFired & { firedAt: string | undefined })[] {
  return events
    .filter(({ event }) => event.type === "TimerFired")
    .map(({ runId, event }) => {
      const data = (event as { data: { timerId: string; scheduledFor?: string; firedAt?: string } }).data;
      return { runId, timerId: data.timerId, scheduledFor: data.scheduledFor ?? "(none)", seq: event.seq, firedAt: data.firedAt };
    });
}

function skippedOf(events: readonly Located[]): { runId: string; timerId: string; firstMissed: string; lastMissed: string; count: number; seq: number }[] {
  return events
    .filter(({ event }) => event.type === "TimerSkipped")
    .map(({ runId, event }) => {
      const { timerId, firstMissed, lastMissed, count } = (event as { data: { timerId: string; firstMissed: string; lastMissed: string; count: number } }).data;
      return { runId, timerId, firstMissed, lastMissed, count, seq: event.seq };
    });
}

function withoutFiredAt({ firedAt: _firedAt, ...rest }: ExpectedFired & { firedAt: string | undefined }): ExpectedFired {
  return rest;
}

/** Sorted by run, then seq, then timer: the commit order within each run. */
function sortFired<T extends { runId: string; timerId: string; seq?: number }>(list: readonly T[]): T[] {
  return [...list].sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : (a.seq ?? 0) - (b.seq ?? 0) || (a.timerId < b.timerId ? -1 : a.timerId > b.timerId ? 1 : 0)));
}

/** Each (run, timer, scheduledFor) fired at most once in the whole log. */
function expectNoTickFiredTwice(logs: ReadonlyMap<string, RunLog>): void {
  const seen = new Map<string, number>();
  for (const [runId, log] of logs) {
    for (const event of log.events) {
      const scheduledFor = (event as { data?: { scheduledFor?: string } }).data?.scheduledFor;
      if (event.type !== "TimerFired" || scheduledFor === undefined) continue;
      const key = `${runId}/${timerOf(event) ?? ""}@${scheduledFor}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  }
  expect([...seen].filter(([, n]) => n > 1)).toEqual([]);
}
