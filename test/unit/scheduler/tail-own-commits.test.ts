/**
 * The tail behind the host's own fire commits (a long recovery fires due timers before the tail
 * starts from the recovery's tip): when it reaches them, a run the fire committer already moved
 * past them keeps its newer state; it is not read back at an older commit, which re-armed a tick
 * already fired.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { CommitChange, RepoStore } from "../../../src/substrate/types.js";
import { nextTick } from "../../../src/workflow/cron.js";
import { createHarness, firedOf, type Harness } from "./harness.js";

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Holds back every commit the store's subscriptions would deliver until `release()`. */
function holdSubscriptions(store: RepoStore): { release(): void } {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const subscribe = store.subscribe.bind(store);
  store.subscribe = (principal, repoId, ref, opts) => {
    const inner = subscribe(principal, repoId, ref, opts);
    return {
      async *[Symbol.asyncIterator]() {
        for await (const commit of inner as AsyncIterable<CommitChange>) {
          await gate;
          yield commit;
        }
      },
    } as ReturnType<RepoStore["subscribe"]>;
  };
  return { release: open };
}

describe("the tail and the host's own fire commits", () => {
  // 20: more own commits than the tail's notes were once capped at (16); a note now lives until
  // the tail passes its commit.
  it.each([3, 20])("leaves a run the fire committer moved past a commit at its newer state (%i commits behind): the next tick stays armed, nothing is fired or skipped again", async (ticks) => {
    const start = "2026-05-01T00:00:00.000Z";
    h = await createHarness(start);
    const cron = "*/10 * * * * *";
    await h.append("c", { type: "TimerSet", data: { timerId: "tick", fireAt: nextTick(cron, "UTC", start), cron } });
    const held = holdSubscriptions(h.store);
    await h.scheduler.start();
    // The ticks fire while the tail is held before the first of their commits.
    const at = (tick: number): string => new Date(Date.parse(start) + tick * 10_000).toISOString();
    for (let i = 0; i < ticks; i++) {
      await h.clock.advance(10_000);
      await h.scheduler.idle();
    }
    expect(firedOf(await h.log("c")).map((f) => f.scheduledFor)).toEqual(Array.from({ length: ticks }, (_, i) => at(i + 1)));
    const armedBefore = h.scheduler.queuedTimers().map((t) => t.fireAt);
    expect(armedBefore).toEqual([at(ticks + 1)]);
    h.events.length = 0;
    // What the tail reads of the run's log while it catches up.
    const listed: string[] = [];
    const open = h.store.openCommittedReads.bind(h.store);
    h.store.openCommittedReads = async (principal, repoId, ref) => {
      const reads = await open(principal, repoId, ref);
      const listDir = reads.listDir.bind(reads);
      reads.listDir = (path) => {
        listed.push(path);
        return listDir(path);
      };
      return reads;
    };
    held.release();
    // The tail catches up with the commits, a millisecond at a time (an overdue timer fires at
    // the next wake).
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      for (const t of h.scheduler.queuedTimers()) seen.add(t.fireAt);
      await h.clock.advance(1);
    }
    await h.scheduler.idle();
    // Never back at a tick already fired, and the log is not read back.
    expect([...seen]).toEqual(armedBefore);
    expect(listed.filter((path) => path.startsWith("runs/c"))).toEqual([]);
    expect(h.scheduler.queuedTimers().map((t) => t.fireAt)).toEqual(armedBefore);
    expect(h.events.filter((e) => e.type === "fired" || e.type === "skipped")).toEqual([]);
    await h.clock.advance(10_000 - 200);
    await h.scheduler.idle();
    expect(firedOf(await h.log("c")).map((f) => f.scheduledFor).slice(ticks)).toEqual([at(ticks + 1)]);
    expect((await h.log("c")).filter((e) => e.type === "TimerSkipped")).toEqual([]);
  });
});
