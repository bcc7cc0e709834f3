/**
 * Room for other writers of a repository, and the commit fence (issue 19: a library writer at
 * ~10 commits/s starved `git push`; a host that lost its lock still committed).
 */
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { TimerApi } from "../../../src/substrate/types.js";
import { appendNext } from "../../helpers/append-merge.js";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";

/**
 * Timers that fire on the next microtask and remember every delay asked for, on a monotonic
 * time of their own that moves only by the delays that ran: how long the machine took between
 * two commits is no part of the test (on real time, a commit slower than the room, as under
 * load, left no room to wait for).
 */
function recordingTimers(): TimerApi & { delays: number[] } {
  const delays: number[] = [];
  let nowMs = 0;
  return {
    delays,
    setTimeout(callback, ms) {
      delays.push(ms);
      queueMicrotask(() => {
        nowMs += Math.max(0, ms);
        callback();
      });
      return delays.length;
    },
    clearTimeout() {},
    now: () => nowMs,
  };
}

describe("room for other writers", () => {
  it("waits a jittered backoff after losing a compare-and-swap instead of re-taking the ref at once", async () => {
    const timers = recordingTimers();
    const { store, fs } = createMemStore({ timers, foreignWriterRoomMs: 100 });
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    let runs = 0;
    const result = await store.writeTreePreservingPrefix(null, REPO, "main", {
      preservePrefix: "runs/r1/events/",
      message: "mine",
      merge: async (existing) => {
        runs += 1;
        // Another process (a git push) commits between our read of the tip and our swap.
        if (runs === 1) await other.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq, who: "other" })));
        const files = new Map<string, Uint8Array | string>(existing);
        files.set(`${existing.size + 1}.json`, JSON.stringify({ who: "mine" }));
        return { files };
      },
    });
    expect(result).toMatchObject({ committed: true, attempts: 2 });
    const room = timers.delays.filter((ms) => ms >= 50);
    expect(room).toHaveLength(1);
    expect(room[0]).toBeLessThan(150);
  });

  it("spaces its own commits after seeing a commit by someone else, and not otherwise", async () => {
    const timers = recordingTimers();
    const { store, fs } = createMemStore({ timers, foreignWriterRoomMs: 100 });
    const { store: other } = createMemStore({ fs });
    await store.initRepo(null, REPO);
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    expect(timers.delays.filter((ms) => ms > 0)).toEqual([]);
    await other.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq, who: "other" })));
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    expect(timers.delays.filter((ms) => ms > 0)).toHaveLength(1);
  });

  it("does not take its own commits to another ref of the repository for someone else's", async () => {
    // A dispatch consumer checkpoints on refs/consumers/<name> between fire commits on main.
    const timers = recordingTimers();
    const { store } = createMemStore({ timers, foreignWriterRoomMs: 100 });
    await store.initRepo(null, REPO);
    for (let i = 0; i < 3; i++) {
      await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
      await store.writeTree(null, REPO, "refs/consumers/c1", { files: { "consumer.json": `{"i":${i}}` }, message: "checkpoint" });
    }
    expect(timers.delays.filter((ms) => ms > 0)).toEqual([]);
  });
});

describe("commit fence", () => {
  it("moves no ref once the fence refuses, and the refusal reaches the writer", async () => {
    let open = true;
    const { store } = createMemStore({
      fence: () => {
        if (!open) throw new WorkflowHostError("host_locked", "the lock is lost", {});
      },
    });
    await store.initRepo(null, REPO);
    await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })));
    const tip = await store.resolveRef(null, REPO, "main");
    open = false;
    await expect(store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })))).rejects.toMatchObject({ code: "host_locked" });
    await expect(store.writeTree(null, REPO, "main", { files: { "notes/a.txt": "x" }, message: "x" })).rejects.toMatchObject({ code: "host_locked" });
    expect(await store.resolveRef(null, REPO, "main")).toBe(tip);
    open = true;
    expect(await store.writeTree(null, REPO, "main", { files: { "notes/a.txt": "x" }, message: "x" })).toMatchObject({ committed: true });
  });
});
