/**
 * The parsed-event cache: events parsed once per (blob oid, seq, size limit), shared deep-frozen,
 * bad events never cached; and run logs read through it, which must be the logs read without it.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { hashObject } from "../../../src/substrate/git-object.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { createMemoryRepoStore } from "../../../src/testing/index.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent } from "../../../src/workflow/events.js";
import { ParsedEventCache, sharedParsedEvents } from "../../../src/workflow/parsed-event-cache.js";
import { readRunLog, readRunLogFromFiles, type RunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import type { RunEvent } from "../../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { thrownCode } from "../../helpers/expect-code.js";

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === "string" ? value : JSON.stringify(value));
const blobOid = (bytes: Uint8Array): string => hashObject("blob", bytes).oid;

const timerSet = (seq: number, timerId = "t1"): Record<string, unknown> => ({
  seq,
  type: "TimerSet",
  at: "2026-05-01T10:00:00Z",
  data: { timerId, fireAt: "2026-05-01T12:00:00+02:00", stepId: "s.1" },
});
const signal = (seq: number): Record<string, unknown> => ({
  seq,
  type: "SignalReceived",
  signalName: "approve",
  signalId: `s-${seq}`,
  payload: { ok: true, list: [1, { deep: ["x"] }] },
  at: "2026-05-01T10:00:00Z",
});

describe("ParsedEventCache", () => {
  it("parses a blob once per seq and limit: the second parse is the first object, bytes unread", () => {
    const cache = new ParsedEventCache();
    const bytes = encode(timerSet(1));
    const oid = blobOid(bytes);
    const first = cache.parse(oid, bytes, { path: "runs/r/events/1.json", expectedSeq: 1 });
    expect(first).toEqual(parseEvent(bytes, { expectedSeq: 1 }));
    expect(cache.size).toBe(1);
    expect(cache.get(oid, 1, undefined)).toBe(first);

    // Other bytes under the same oid: a re-parse would give t2 (or fail on the seq); the cache
    // gives back the event it has.
    const other = encode(timerSet(1, "t2"));
    expect(cache.parse(oid, other, { expectedSeq: 1 })).toBe(first);
    expect(cache.parse(oid, encode("not json"), { expectedSeq: 1 })).toBe(first);
    expect(cache.size).toBe(1);
    expect((cache.get(oid, 1, undefined) as unknown as { data: { timerId: string } }).data.timerId).toBe("t1");
  });

  it("hands out deep-frozen events", () => {
    const cache = new ParsedEventCache();
    const bytes = encode(signal(2));
    const event = cache.parse(blobOid(bytes), bytes, { expectedSeq: 2 });
    const payload = (event as unknown as { payload: { ok: boolean; list: [number, { deep: string[] }] } }).payload;
    expect(Object.isFrozen(event)).toBe(true);
    expect(Object.isFrozen(payload)).toBe(true);
    expect(Object.isFrozen(payload.list)).toBe(true);
    expect(Object.isFrozen(payload.list[1])).toBe(true);
    expect(Object.isFrozen(payload.list[1].deep)).toBe(true);
    // Test modules run in strict mode: writing to a frozen object throws.
    expect(() => {
      (event as { seq: number }).seq = 99;
    }).toThrow(TypeError);
    expect(() => {
      payload.list[1].deep.push("y");
    }).toThrow(TypeError);
    expect(() => {
      (payload as { ok: boolean }).ok = false;
    }).toThrow(TypeError);
    expect(event.seq).toBe(2);
    expect(payload).toEqual({ ok: true, list: [1, { deep: ["x"] }] });
    // The next reader gets the same, unchanged object.
    expect(cache.parse(blobOid(bytes), bytes, { expectedSeq: 2 })).toBe(event);
  });

  it("throws what parseEvent throws for a bad event and caches nothing", () => {
    const cache = new ParsedEventCache();
    const good = encode(timerSet(1));
    cache.parse(blobOid(good), good, { expectedSeq: 1 });
    const cases: [string, Uint8Array, number, number | undefined][] = [
      ["bad JSON", encode('{"seq":1,'), 1, undefined],
      ["not an object", encode("[1,2]"), 1, undefined],
      ["bad instant", encode({ ...timerSet(1), data: { timerId: "t1", fireAt: "2026-02-30T00:00:00Z" } }), 1, undefined],
      ["bad id", encode({ ...timerSet(1), data: { timerId: "bad id!", fireAt: "2026-05-01T10:00:00Z" } }), 1, undefined],
      ["too big", encode(timerSet(1)), 1, 10],
      ["seq mismatch", encode(timerSet(3)), 4, undefined],
      ["bad UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), 1, undefined],
    ];
    for (const [label, bytes, expectedSeq, maxEventBytes] of cases) {
      const ctx = maxEventBytes === undefined ? { expectedSeq } : { expectedSeq, maxEventBytes };
      const want = thrownCode(() => parseEvent(bytes, ctx));
      const oid = blobOid(bytes);
      expect(thrownCode(() => cache.parse(oid, bytes, ctx)), label).toBe(want);
      expect(cache.size, label).toBe(1);
      expect(cache.get(oid, expectedSeq, maxEventBytes), label).toBeUndefined();
      // Not remembered as bad either: a second parse fails the same way.
      expect(thrownCode(() => cache.parse(oid, bytes, ctx)), label).toBe(want);
    }
    expect(thrownCode(() => parseEvent(encode(timerSet(1)), { maxEventBytes: 10 }))).toBe("payload_too_large");
  });

  it("keys by seq: the same blob read under another seq is a miss and fails the seq check", () => {
    const cache = new ParsedEventCache();
    const bytes = encode(timerSet(1));
    const oid = blobOid(bytes);
    const event = cache.parse(oid, bytes, { expectedSeq: 1 });
    expect(cache.get(oid, 2, undefined)).toBeUndefined();
    expect(thrownCode(() => cache.parse(oid, bytes, { expectedSeq: 2 }))).toBe(thrownCode(() => parseEvent(bytes, { expectedSeq: 2 })));
    expect(cache.size).toBe(1);
    expect(cache.get(oid, 1, undefined)).toBe(event);
  });

  it("keys by size limit", () => {
    const cache = new ParsedEventCache();
    const bytes = encode(timerSet(1));
    const oid = blobOid(bytes);
    const byDefault = cache.parse(oid, bytes, { expectedSeq: 1 });
    // The default limit given explicitly is the same limit.
    expect(cache.get(oid, 1, DEFAULT_MAX_EVENT_BYTES)).toBe(byDefault);
    // A limit the blob exceeds: a miss, and the size check fails as parseEvent's does.
    expect(cache.get(oid, 1, 10)).toBeUndefined();
    expect(thrownCode(() => cache.parse(oid, bytes, { expectedSeq: 1, maxEventBytes: 10 }))).toBe("payload_too_large");
    expect(cache.size).toBe(1);
    // Another limit it fits: a separate entry.
    const larger = cache.parse(oid, bytes, { expectedSeq: 1, maxEventBytes: 4096 });
    expect(larger).not.toBe(byDefault);
    expect(larger).toEqual(byDefault);
    expect(cache.size).toBe(2);
    expect(cache.get(oid, 1, 4096)).toBe(larger);
    expect(cache.get(oid, 1, undefined)).toBe(byDefault);
  });

  it("stays within its capacity", () => {
    const capacity = 8 * 1024;
    const cache = new ParsedEventCache(capacity);
    let largest = 0;
    for (let seq = 1; seq <= 500; seq++) {
      const bytes = encode(timerSet(seq, `t${seq}`));
      const event = cache.parse(blobOid(bytes), bytes, { expectedSeq: seq });
      expect(event.seq).toBe(seq);
      largest = Math.max(largest, cache.size);
    }
    // Every entry weighs more than its bytes (~100 here), so far fewer than 500 fit.
    expect(largest).toBeLessThanOrEqual(Math.floor(capacity / 100));
    expect(largest).toBeGreaterThan(0);
    // The most recent one is still there.
    const last = encode(timerSet(500, "t500"));
    expect(cache.get(blobOid(last), 500, undefined)?.seq).toBe(500);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.get(blobOid(last), 500, undefined)).toBeUndefined();
  });

  it("does not keep an event heavier than its whole capacity, but still parses it", () => {
    const cache = new ParsedEventCache(64);
    const bytes = encode(signal(1));
    const event = cache.parse(blobOid(bytes), bytes, { expectedSeq: 1 });
    expect(event).toEqual(parseEvent(bytes, { expectedSeq: 1 }));
    expect(cache.size).toBe(0);
  });

  it("agrees with parseEvent on random call sequences, sharing repeated keys", () => {
    const blobs = [timerSet(1), timerSet(2, "t2"), signal(2), signal(3), { seq: 1, type: "StepStarted", stepId: "a" }, "{oops", { ...timerSet(1), data: { timerId: "t", fireAt: "nope" } }].map(encode);
    const call = fc.record({ blob: fc.integer({ min: 0, max: blobs.length - 1 }), seq: fc.integer({ min: 1, max: 3 }), limit: fc.constantFrom<number | undefined>(undefined, 40, 4096) });
    fc.assert(
      fc.property(fc.array(call, { maxLength: 40 }), (calls) => {
        const cache = new ParsedEventCache();
        const seen = new Map<string, RunEvent>();
        for (const { blob, seq, limit } of calls) {
          const bytes = blobs[blob] as Uint8Array;
          const ctx = limit === undefined ? { expectedSeq: seq } : { expectedSeq: seq, maxEventBytes: limit };
          const key = `${blob}/${seq}/${limit ?? DEFAULT_MAX_EVENT_BYTES}`;
          let want: RunEvent | string;
          try {
            want = parseEvent(bytes, ctx);
          } catch (error) {
            want = (error as { code: string }).code;
          }
          if (typeof want === "string") {
            expect(thrownCode(() => cache.parse(blobOid(bytes), bytes, ctx))).toBe(want);
          } else {
            const got = cache.parse(blobOid(bytes), bytes, ctx);
            expect(got).toEqual(want);
            const before = seen.get(key);
            if (before !== undefined) expect(got).toBe(before);
            seen.set(key, got);
          }
          expect(cache.size).toBe(seen.size);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("has a process-wide instance", () => {
    expect(sharedParsedEvents).toBeInstanceOf(ParsedEventCache);
  });
});

// ---------------------------------------------------------------------------------------------

const REPO = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const stores: RepoStore[] = [];

afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

/** A validated store and, over the same repos, one that commits anything (as `git push` may). */
async function openStores(): Promise<{ store: RepoStore; raw: RepoStore }> {
  const { store, fs } = createMemoryRepoStore();
  const { store: raw } = createMemoryRepoStore({ fs, kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: "deployments" }] });
  stores.push(store, raw);
  await store.initRepo(null, REPO);
  return { store, raw };
}

async function append(store: RepoStore, runId: string, bodies: Record<string, unknown>[]): Promise<void> {
  await appendRunEvents({ store, principal: null, repoId: REPO.id, runId, message: `append to ${runId}`, decide: () => ({ append: bodies, result: undefined }) });
}

async function rawWrite(raw: RepoStore, files: Record<string, string>): Promise<void> {
  await raw.writeTree(null, REPO, "refs/heads/main", { files, message: "raw write" });
}

function tip(store: RepoStore): Promise<CommittedReads> {
  return store.openCommittedReads(null, REPO, "refs/heads/main");
}

const body = (event: Record<string, unknown>): Record<string, unknown> => {
  const { seq: _seq, ...rest } = event;
  return rest;
};

describe("readRunLog with a parsed-event cache", () => {
  it("returns the very same event objects on a second read", async () => {
    const { store } = await openStores();
    await append(store, "r1", [body(timerSet(1)), body(signal(2))]);
    await append(store, "r1", [{ type: "StepStarted", stepId: "a" }]);
    const reads = await tip(store);
    const cache = new ParsedEventCache();
    const first = await readRunLog(reads, "r1", { parsedEvents: cache });
    expect(first.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(cache.size).toBe(3);
    const second = await readRunLog(reads, "r1", { parsedEvents: cache });
    expect(second.events).toHaveLength(3);
    second.events.forEach((event, i) => expect(event).toBe(first.events[i]));
    expect(second).toEqual(first);
    expect(cache.size).toBe(3);
    // An append later: only the new event is parsed, the old ones are shared.
    await append(store, "r1", [{ type: "StepStarted", stepId: "b" }]);
    const third = await readRunLog(await tip(store), "r1", { parsedEvents: cache });
    expect(third.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    first.events.forEach((event, i) => expect(third.events[i]).toBe(event));
    expect(cache.size).toBe(4);
  });

  it("adds nothing to any cache with parsedEvents: null, and the logs are the same", async () => {
    const { store } = await openStores();
    await append(store, "r-null", [body(timerSet(1, "only-here")), body(signal(2))]);
    const reads = await tip(store);
    const given = new ParsedEventCache();
    const sharedBefore = sharedParsedEvents.size;
    const uncached = await readRunLog(reads, "r-null", { parsedEvents: null });
    const again = await readRunLog(reads, "r-null", { parsedEvents: null });
    expect(sharedParsedEvents.size).toBe(sharedBefore);
    expect(given.size).toBe(0);
    // Parsed afresh each time: equal, not shared, not frozen.
    expect(again).toEqual(uncached);
    expect(again.events[0]).not.toBe(uncached.events[0]);
    expect(Object.isFrozen(uncached.events[0])).toBe(false);
    // A given cache is used instead of the shared one.
    const cached = await readRunLog(reads, "r-null", { parsedEvents: given });
    expect(given.size).toBe(2);
    expect(sharedParsedEvents.size).toBe(sharedBefore);
    expect(cached).toEqual(uncached);
    // By default the process-wide cache is used.
    // (The store's own checks on append may have put some of these events there already.)
    const byDefault = await readRunLog(reads, "r-null");
    expect(byDefault).toEqual(uncached);
    const listed = await reads.listDir("runs/r-null/events");
    expect(listed.map((e) => e.name)).toEqual(["1.json", "2.json"]);
    listed.forEach((entry, i) => expect(sharedParsedEvents.get(entry.oid, i + 1, undefined)).toBe(byDefault.events[i]));
    expect(given.get((listed[0] as { oid: string }).oid, 1, undefined)).toBe(cached.events[0]);
  });

  it("reads a log with bad entries the same with and without a cache", async () => {
    const { store, raw } = await openStores();
    await append(store, "r2", [body(timerSet(1)), body(signal(2))]);
    const one = JSON.stringify(timerSet(1));
    await rawWrite(raw, {
      // The blob of 1.json again, under seq 3: same oid, another seq, so not the cached event.
      "runs/r2/events/3.json": one,
      "runs/r2/events/4.json": "{not json",
      "runs/r2/events/5.json/inner.json": one,
      "runs/r2/events/notes.txt": "hello",
      "runs/r2/events/7.json": JSON.stringify({ seq: 7, type: "RunCompleted" }),
      "runs/r2/events/8.json": JSON.stringify({ seq: 8, type: "StepStarted" }),
      "runs/r2/README": "stray",
    });
    const reads = await tip(store);
    const plain = await readRunLog(reads, "r2", { parsedEvents: null });
    // What the log holds, worked out by hand.
    expect(plain.events.map((e) => e.seq)).toEqual([1, 2, 7]);
    expect(plain.bad.map((b) => [b.path, b.seq, b.error.code])).toEqual([
      ["runs/r2/events/notes.txt", null, "event_invalid"],
      ["runs/r2/events/3.json", 3, "event_invalid"],
      ["runs/r2/events/4.json", 4, "event_invalid"],
      ["runs/r2/events/5.json", 5, "event_invalid"],
    ]);
    expect(plain.maxFileSeq).toBe(8);
    expect(plain.problems.map((p) => p.seq)).toContain(8);
    expect(plain.problems.map((p) => p.seq)).toContain(6);
    expect(plain.state.terminal).toBe("RunCompleted");

    const cache = new ParsedEventCache();
    const cold = await readRunLog(reads, "r2", { parsedEvents: cache });
    const warm = await readRunLog(reads, "r2", { parsedEvents: cache });
    expect(cold).toEqual(plain);
    expect(warm).toEqual(plain);
    expect(warm.events[0]).toBe(cold.events[0]);
    // Cached: 1, 2, 7 and 8 (valid, though after the terminal event); never 3 (seq mismatch) or 4.
    expect(cache.size).toBe(4);
    // Warmed under the default limit, read under a smaller one: the limit applies.
    const small = { maxEventBytes: 40 };
    const smallPlain = await readRunLog(reads, "r2", { ...small, parsedEvents: null });
    const smallCached = await readRunLog(reads, "r2", { ...small, parsedEvents: cache });
    expect(smallCached).toEqual(smallPlain);
    expect(smallPlain.bad.map((b) => b.error.code)).toContain("payload_too_large");
    expect(smallPlain.events.length).toBeLessThan(plain.events.length);
  });

  it("readRunLogFromFiles gives the same log with oids and a cache as without", () => {
    const files = new Map<string, Uint8Array>([
      ["1.json", encode(timerSet(1))],
      ["2.json", encode(signal(2))],
      ["3.json", encode(timerSet(1))],
      ["4.json", encode("[]")],
      ["x.json", encode(timerSet(5))],
      ["6.json", encode({ seq: 6, type: "RunFailed", error: "boom" })],
    ]);
    const oids = new Map([...files].map(([name, bytes]) => [name, blobOid(bytes)]));
    const plain: RunLog = readRunLogFromFiles("r3", files, { parsedEvents: null });
    const cache = new ParsedEventCache();
    const cold = readRunLogFromFiles("r3", files, { oids, parsedEvents: cache });
    const warm = readRunLogFromFiles("r3", files, { oids, parsedEvents: cache });
    expect(plain.events.map((e) => e.seq)).toEqual([1, 2, 6]);
    expect(plain.bad.map((b) => b.seq)).toEqual([null, 3, 4]);
    expect(plain.maxFileSeq).toBe(6);
    expect(cold).toEqual(plain);
    expect(warm).toEqual(plain);
    expect(cache.size).toBe(3);
    warm.events.forEach((event, i) => expect(event).toBe(cold.events[i]));
    // Without oids nothing can be looked up or remembered.
    const noOids = new ParsedEventCache();
    expect(readRunLogFromFiles("r3", files, { parsedEvents: noOids })).toEqual(plain);
    expect(noOids.size).toBe(0);
    // With oids the cache answers without the bytes: other bytes under a cached oid are not read.
    const swapped = new Map(files).set("1.json", encode(timerSet(1, "changed")));
    const fromCache = readRunLogFromFiles("r3", swapped, { oids, parsedEvents: cache });
    expect(fromCache.events[0]).toBe(cold.events[0]);
  });
});
