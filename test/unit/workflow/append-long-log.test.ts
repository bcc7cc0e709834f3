/**
 * Appending to a long run: after the first append read the log, each further one — whether this
 * writer or another made the commits in between — lists nothing of `events/` and reads only the
 * blobs it has not seen, and decides on the same log a fresh read gives.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_REF } from "../../../src/substrate/ref-name.js";
import type { CommittedReads, KindHandler, PushContext, RepoStore } from "../../../src/substrate/types.js";
import { buildFixtureRepo } from "../../../src/testing/fixture-repo.js";
import { createMemoryRepoStore, type MemoryRepoStore } from "../../../src/testing/memory-store.js";
import { readRunLog, type RunLog } from "../../../src/workflow/run-log.js";
import { openRunLog } from "../../../src/workflow/run-log-writer.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { countingReads } from "../../helpers/counting-reads.js";

let opened: MemoryRepoStore | null = null;
afterEach(async () => {
  await opened?.store.close();
  opened = null;
});

const REPO = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const asked = { listed: 0, blobs: 0 };

function counting(reads: CommittedReads): CommittedReads {
  return countingReads(reads, {
    listed: (path) => {
      if (path === "runs/r/events") asked.listed += 1;
    },
    blobs: (count) => {
      asked.blobs += count;
    },
  });
}

async function storeWithRun(events: number): Promise<{ base: RepoStore; store: RepoStore }> {
  opened = createMemoryRepoStore();
  const files: Record<string, object> = {};
  for (let seq = 1; seq <= events; seq += 1) files[`runs/r/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
  await buildFixtureRepo(opened.store, "dep", files);
  const base = opened.store;
  const store = Object.create(base) as RepoStore;
  store.openCommittedReads = async (...args: Parameters<RepoStore["openCommittedReads"]>) => counting(await base.openCommittedReads(...args));
  store.writeTreeDelta = (p, repo, ref, opts) => base.writeTreeDelta(p, repo, ref, { ...opts, computeDelta: (parent, reads) => opts.computeDelta(parent, counting(reads)) });
  return { base, store };
}

describe("appends to a long run", () => {
  it("list nothing of events/ after the first, and read only the blobs others added", async () => {
    const { base, store } = await storeWithRun(400);
    const writer = openRunLog({ store, principal: null, repoId: "dep" });
    let seen: RunLog | null = null;
    const step = (n: number) => (log: RunLog) => {
      seen = log;
      return { append: [{ type: "SignalReceived" as const, signalName: "poke", signalId: `s-${n}`, payload: null, at: "2026-05-01T00:00:00.000Z" }], result: log.nextSeq };
    };
    expect((await writer.append("r", "first", step(1))).result).toBe(401);

    Object.assign(asked, { listed: 0, blobs: 0 });
    expect((await writer.append("r", "second", step(2))).result).toBe(402);
    expect(asked).toEqual({ listed: 0, blobs: 0 });

    // Another writer appends two events: only their blobs are read.
    await base.writeTree(null, REPO, DEFAULT_REF, {
      files: { "runs/r/events/403.json": JSON.stringify({ seq: 403, type: "StepStarted", n: "x" }), "runs/r/events/404.json": JSON.stringify({ seq: 404, type: "StepStarted", n: "y" }) },
      message: "others",
    });
    Object.assign(asked, { listed: 0, blobs: 0 });
    expect((await writer.append("r", "third", step(3))).result).toBe(405);
    expect(asked).toEqual({ listed: 0, blobs: 2 });
    const fresh = await readRunLog(await base.openCommittedReads(null, REPO, DEFAULT_REF), "r", { parsedEvents: null });
    expect((seen as RunLog | null)?.events).toEqual(fresh.events.slice(0, -1));
    expect(fresh.events.map((e) => e.seq).slice(-3)).toEqual([403, 404, 405]);

    // A rewritten event (only a push can make one): the log is read whole again.
    await buildFixtureRepo(base, "dep", { "runs/r/events/7.json": { seq: 7, type: "StepStarted", n: "rewritten" } });
    Object.assign(asked, { listed: 0, blobs: 0 });
    expect((await writer.append("r", "fourth", step(4))).result).toBe(406);
    expect((seen as RunLog | null)?.events.find((e) => e.seq === 7)).toMatchObject({ n: "rewritten" });
    expect(asked.listed).toBeGreaterThan(0);
  });

  it("are validated without listing the run's events/ as objects", async () => {
    const kind = workflowRunKind();
    const validate = kind.validatePush as (ctx: PushContext) => Promise<void>;
    const counted: KindHandler = { ...kind, validatePush: (ctx) => validate({ ...ctx, prior: ctx.prior === null ? null : counting(ctx.prior) }) };
    opened = createMemoryRepoStore({ kindHandlers: [counted] });
    const files: Record<string, object> = {};
    for (let seq = 1; seq <= 300; seq += 1) files[`runs/r/events/${seq}.json`] = { seq, type: "StepStarted", n: seq };
    await buildFixtureRepo(opened.store, "dep", files);
    Object.assign(asked, { listed: 0, blobs: 0 });
    const event = (seq: number): string => JSON.stringify({ seq, type: "StepStarted", n: seq });
    await opened.store.writeTree(null, REPO, DEFAULT_REF, { files: { "runs/r/events/301.json": event(301) }, message: "append" });
    await opened.store.writeTree(null, REPO, DEFAULT_REF, { files: { "runs/r/events/302.json": event(302) }, message: "append" });
    expect(asked.listed).toBe(0);
    // The dense sequence is still checked.
    await expect(opened.store.writeTree(null, REPO, DEFAULT_REF, { files: { "runs/r/events/304.json": event(304) }, message: "gap" })).rejects.toMatchObject({ code: "event_invalid" });
  });
});
