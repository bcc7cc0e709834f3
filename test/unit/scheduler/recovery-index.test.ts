import { afterEach, describe, expect, it } from "vitest";
import { decodeRecoveryIndex, encodeRecoveryIndex, RECOVERY_INDEX_FILE, type RunSummary } from "../../../src/workflow/recovery-index.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, firedOf, REPO, type Harness } from "./harness.js";

let h: Harness | undefined;
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const MAX_EVENT_BYTES = 1_048_576;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function readIndex(harness: Harness): Promise<Map<string, RunSummary>> {
  const bytes = await harness.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE);
  expect(bytes).not.toBeNull();
  const index = decodeRecoveryIndex(bytes as Uint8Array, MAX_EVENT_BYTES);
  expect(index).not.toBeNull();
  return index as Map<string, RunSummary>;
}

async function writeIndex(harness: Harness, index: Map<string, RunSummary>): Promise<void> {
  await harness.store.writeDerived?.(null, RID, RECOVERY_INDEX_FILE, encodeRecoveryIndex(MAX_EVENT_BYTES, index));
}

const timerSet = (timerId: string, fireAt: string): Record<string, unknown> => ({ type: "TimerSet", data: { timerId, fireAt } });

describe("recovery index", () => {
  it("restores a run whose tree is unchanged from its summary, without reading its log", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.append("r2", timerSet("u", "2026-05-01T02:00:00.000Z"));
    await h.scheduler.start();
    await h.scheduler.stop();
    const index = await readIndex(h);
    expect([...index.keys()].sort()).toEqual(["r1", "r2"]);
    // A summary that disagrees with the log is only ever believed while the tree oid matches:
    // here it does, so the restart arms what the summary says (proof that the log was not read).
    const r1 = index.get("r1") as RunSummary;
    index.set("r1", { ...r1, pendingTimers: [{ ...(r1.pendingTimers[0] as RunSummary["pendingTimers"][number]), fireAt: "2026-05-01T03:00:00.000Z" }] });
    await writeIndex(h, index);
    await h.restart();
    expect(h.scheduler.queuedTimers().map((t) => `${t.runId}/${t.timerId}@${t.fireAt}`)).toEqual([
      "r2/u@2026-05-01T02:00:00.000Z",
      "r1/t@2026-05-01T03:00:00.000Z",
    ]);
  });

  it("keeps a series' schedule fields and its pause, so a restored paused series is not queued", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "s", fireAt: "2026-05-01T01:00:00.000Z", cron: "0 * * * *", endAt: "2026-06-01T00:00:00Z", maxTicks: 9, slot: 2, jitterMs: 5000, owner: "sync" } });
    await h.append("r1", { type: "SchedulePaused", at: "2026-05-01T00:10:00.000Z", data: { timerId: "s" } });
    await h.scheduler.start();
    await h.scheduler.stop();
    const summary = (await readIndex(h)).get("r1") as RunSummary;
    expect(summary.pendingTimers).toEqual([
      { timerId: "s", fireAt: "2026-05-01T01:00:00.000Z", setSeq: 1, cron: "0 * * * *", timezone: "UTC", endAt: "2026-06-01T00:00:00.000Z", maxTicks: 9, slot: 2, jitterMs: 5000, owner: "sync", pausedAt: "2026-05-01T00:10:00.000Z" },
    ]);
    await h.restart();
    expect(h.scheduler.queuedTimers()).toEqual([]);
  });

  it("re-reads a run whose tree changed since the index was written", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T00:00:05.000Z"));
    await h.scheduler.start();
    await h.scheduler.stop();
    await h.append("r1", timerSet("t2", "2026-05-01T00:00:07.000Z"));
    await h.restart();
    expect(h.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["t", "t2"]);
    await h.clock.advance(10_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("r1")).map((f) => f.scheduledFor)).toEqual(["2026-05-01T00:00:05.000Z", "2026-05-01T00:00:07.000Z"]);
    // Firing changed r1; stop() wrote its new summary: nothing pending.
    await h.scheduler.stop();
    expect((await readIndex(h)).get("r1")?.pendingTimers).toEqual([]);
  });

  it("ignores an index that is torn, of another version or made with another event size limit", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.scheduler.start();
    await h.scheduler.stop();
    const good = await readIndex(h);
    const wrong = new Map([...good].map(([runId, s]) => [runId, { ...s, pendingTimers: [] }]));
    for (const bytes of [
      Buffer.from("{not json"),
      Buffer.from(JSON.stringify({ format: "workflow-host run index", version: 99, runs: [] })),
      encodeRecoveryIndex(MAX_EVENT_BYTES - 1, wrong),
    ]) {
      await h.store.writeDerived?.(null, RID, RECOVERY_INDEX_FILE, bytes);
      await h.restart();
      expect(h.scheduler.queuedTimers().map((t) => t.timerId)).toEqual(["t"]);
    }
  });

  it("keeps runs with bad events out of the index, so their reports repeat at every start", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("good", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.rawWrite({ "runs/bad/events/1.json": '{"seq":1,"type":"TimerSet",}' });
    await h.scheduler.start();
    await h.scheduler.stop();
    expect([...(await readIndex(h)).keys()]).toEqual(["good"]);
    h.events.length = 0;
    await h.restart();
    expect(h.events.filter((e) => e.type === "bad_event").map((e) => (e.type === "bad_event" ? e.path : ""))).toEqual(["runs/bad/events/1.json"]);
    expect(h.events.find((e) => e.type === "recovered")).toMatchObject({ runs: 2, pending: 1, badEvents: 1 });
  });

  it("recovers the same runs, timers and summaries warm (from the index) as cold (from the logs), and fires restored timers once", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("once", timerSet("t", "2026-05-01T00:00:10.000Z"), { type: "StepCompleted", data: { stepId: "a" } });
    await h.append("two", timerSet("a", "2026-05-01T00:00:20.000Z"), { type: "TimerSet", data: { timerId: "b", fireAt: "2026-05-01T03:00:00.000Z", stepId: "s" } });
    await h.append("cron", { type: "TimerSet", data: { timerId: "c", fireAt: "2026-05-01T01:00:00.000Z", cron: "0 * * * *", timezone: "Europe/Paris", misfire: "latest" } });
    await h.append("paused", { type: "TimerSet", data: { timerId: "p", fireAt: "2026-05-01T01:00:00.000Z", cron: "0 * * * *" } }, { type: "SchedulePaused", at: "2026-05-01T00:00:00.000Z", data: { timerId: "p" } });
    await h.append("ended", timerSet("t", "2026-05-01T01:00:00.000Z"), { type: "RunCompleted" });
    await h.append("cancelled", timerSet("t", "2026-05-01T01:00:00.000Z"), { type: "TimerCancelled", data: { timerId: "t" } });
    // More timers than a row's bit mask of queued timers holds.
    await h.append("many", ...Array.from({ length: 35 }, (_, i) => timerSet(`m${i}`, `2026-05-0${1 + (i % 3)}T0${i % 10}:30:00.000Z`)));
    await h.rawWrite({ "runs/bad/events/1.json": '{"seq":1,"type":"TimerSet",}', "runs/bad/events/2.json": JSON.stringify({ seq: 2, type: "TimerSet", data: { timerId: "x", fireAt: "2026-05-01T02:00:00.000Z" } }) });
    const starts: { queued: unknown; recovered: unknown; index: unknown }[] = [];
    const look = async (): Promise<void> => {
      const recovered = h?.events.filter((e) => e.type === "recovered").at(-1);
      const queued = h?.scheduler.queuedTimers();
      await h?.scheduler.stop();
      const index = await readIndex(h as Harness);
      starts.push({ queued, recovered: { ...recovered, ms: 0 }, index: new Map([...index].sort(([a], [b]) => a.localeCompare(b))) });
    };
    await h.scheduler.start(); // cold: no index yet
    await look();
    await h.restart(); // warm: every clean run from the index
    await look();
    await h.store.writeDerived?.(null, RID, RECOVERY_INDEX_FILE, Buffer.from("{}"));
    await h.restart(); // cold again: the index is unusable
    await look();
    expect(starts[1]).toEqual(starts[0]);
    expect(starts[2]).toEqual(starts[0]);
    expect((starts[0]?.queued as unknown[]).length).toBe(1 + 2 + 1 + 35 + 1);
    // Timers restored from the index fire once, and the runs they changed are summarised anew.
    await h.restart();
    await h.clock.advance(30_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("once")).map((f) => f.scheduledFor)).toEqual(["2026-05-01T00:00:10.000Z"]);
    expect(firedOf(await h.log("two")).map((f) => f.scheduledFor)).toEqual(["2026-05-01T00:00:20.000Z"]);
    await h.append("two", timerSet("a", "2026-05-01T00:01:00.000Z"));
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    expect(firedOf(await h.log("two")).map((f) => f.scheduledFor)).toEqual(["2026-05-01T00:00:20.000Z", "2026-05-01T00:01:00.000Z"]);
    // A cancel read by the tail takes a restored run's timer out of the queue, the last one too.
    await h.append("many", { type: "TimerCancelled", data: { timerId: "m34" } }, { type: "TimerCancelled", data: { timerId: "m0" } });
    await h.clock.advance(0);
    await h.scheduler.idle();
    expect(h.scheduler.queuedTimers().filter((t) => t.runId === "many").map((t) => t.timerId).sort()).toEqual(Array.from({ length: 33 }, (_, i) => `m${i + 1}`).sort());
    await h.scheduler.stop();
    const after = await readIndex(h);
    expect(after.get("once")?.pendingTimers).toEqual([]);
    expect(after.get("two")?.pendingTimers.map((t) => t.timerId)).toEqual(["b"]);
    expect(after.get("many")?.pendingTimers.map((t) => t.timerId)).toEqual(Array.from({ length: 33 }, (_, i) => `m${i + 1}`));
  });

  it("restores every run without listing runs/ when the index is every run of that very folder, and lists it once anything changed", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.append("r2", timerSet("u", "2026-05-01T02:00:00.000Z"), { type: "TimerSet", data: { timerId: "v", fireAt: "2026-05-01T00:00:30.000Z", cron: "* * * * *" } });
    await h.append("r3", timerSet("w", "2026-05-01T01:00:00.000Z"), { type: "RunFailed" });
    const store = h.store;
    let listings = 0;
    const open = store.openCommittedReads.bind(store);
    store.openCommittedReads = async (principal, repoId, ref) => {
      const reads = await open(principal, repoId, ref);
      const listDir = reads.listDir.bind(reads);
      const scan = reads.scan?.bind(reads);
      return {
        ...reads,
        listDir: (path: string) => {
          if (path.replace(/\/$/, "") === "runs") listings += 1;
          return listDir(path);
        },
        ...(scan === undefined ? {} : { scan }),
      };
    };
    const runsFolder = async (): Promise<string | null> => (await open(null, RID, "refs/heads/main")).treeOid("runs");
    const rawIndex = async (): Promise<Record<string, unknown>> => JSON.parse(Buffer.from((await store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)) as Uint8Array).toString("utf8")) as Record<string, unknown>;
    const queued = (): string[] => (h as Harness).scheduler.queuedTimers().map((t) => `${t.runId}/${t.timerId}@${t.fireAt}`);
    await h.scheduler.start();
    const cold = queued();
    expect(listings).toBe(1);
    await h.scheduler.stop();
    expect((await rawIndex()).runsTreeOid).toBe(await runsFolder());
    listings = 0;
    await h.restart();
    expect(listings).toBe(0);
    expect(queued()).toEqual(cold);
    expect(h.events.filter((e) => e.type === "recovered").at(-1)).toMatchObject({ runs: 3, pending: 3, badEvents: 0 });
    // A run changed since: the folder is another, so it is listed and only that run is read.
    await h.scheduler.stop();
    await h.append("r1", timerSet("t2", "2026-05-01T03:00:00.000Z"));
    await h.restart();
    expect(listings).toBe(1);
    const byFireAt = (a: string, b: string): number => (a.split("@")[1] ?? "").localeCompare(b.split("@")[1] ?? "");
    expect(queued()).toEqual([...cold, "r1/t2@2026-05-01T03:00:00.000Z"].sort(byFireAt));
    // Fires change runs; stop() writes the index and, having listed runs/ at the tip and found
    // every run there at its tree, says which folder it is every run of.
    await h.clock.advance(60_000);
    await h.scheduler.idle();
    await h.scheduler.stop();
    expect((await rawIndex()).runsTreeOid).toBe(await runsFolder());
    listings = 0;
    await h.restart();
    expect(listings).toBe(0);
    const warm = queued();
    expect(warm.some((t) => t.startsWith("r2/v@"))).toBe(true);
    // The same as a start that reads every log.
    await h.scheduler.stop();
    await store.writeDerived?.(null, RID, RECOVERY_INDEX_FILE, Buffer.from("{}"));
    await h.restart();
    expect(queued()).toEqual(warm);
    // A run changed behind the host's back after the index claimed the folder: not restored from it.
    await h.scheduler.stop();
    await h.rawWrite({ "runs/r4/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "z", fireAt: "2026-05-02T00:00:00.000Z" } }) });
    listings = 0;
    await h.restart();
    expect(listings).toBe(1);
    expect(queued()).toContain("r4/z@2026-05-02T00:00:00.000Z");
  });

  it("claims no folder at stop() when a run there has bad events", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T00:00:10.000Z"));
    await h.rawWrite({ "runs/bad/events/1.json": "{" });
    await h.scheduler.start();
    await h.clock.advance(20_000);
    await h.scheduler.idle();
    await h.scheduler.stop();
    const raw = JSON.parse(Buffer.from((await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)) as Uint8Array).toString("utf8")) as Record<string, unknown>;
    expect(raw.runsTreeOid).toBeNull();
  });

  it("ignores an index that holds two generations of one timer in a run", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z");
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.scheduler.start();
    await h.scheduler.stop();
    const index = await readIndex(h);
    const r1 = index.get("r1") as RunSummary;
    const twice = r1.pendingTimers[0] as RunSummary["pendingTimers"][number];
    index.set("r1", { ...r1, pendingTimers: [{ ...twice, fireAt: "2026-05-01T05:00:00.000Z" }, twice] });
    await writeIndex(h, index);
    await h.restart();
    expect(h.scheduler.queuedTimers().map((t) => `${t.timerId}@${t.fireAt}`)).toEqual(["t@2026-05-01T01:00:00.000Z"]);
  });

  it("is neither read nor written with recoveryIndex: false", async () => {
    h = await createHarness("2026-05-01T00:00:00.000Z", { recoveryIndex: false });
    await h.append("r1", timerSet("t", "2026-05-01T01:00:00.000Z"));
    await h.scheduler.start();
    await h.scheduler.stop();
    expect(await h.store.readDerived?.(null, RID, RECOVERY_INDEX_FILE)).toBeNull();
  });
});
