import { describe, expect, it } from "vitest";
import { decodeRecoveryIndex, encodeRecoveryIndex, type RunSummary } from "../../../src/workflow/recovery-index.js";

const LIMIT = 1_048_576;
const oid = (c: string): string => c.repeat(40);

const summaries: [string, RunSummary][] = [
  ["r1", { runTreeOid: oid("a"), eventsOid: oid("b"), lastEventOid: oid("1"), maxFileSeq: 3, lastSeq: 3, terminal: null, pendingTimers: [{ timerId: "t", fireAt: "2026-05-01T01:00:00.000Z", setSeq: 2 }] }],
  ["r2", { runTreeOid: oid("c"), eventsOid: null, lastEventOid: null, maxFileSeq: -1, lastSeq: -1, terminal: null, pendingTimers: [] }],
  ["r3", { runTreeOid: oid("d"), eventsOid: oid("e"), lastEventOid: null, maxFileSeq: 9, lastSeq: 8, terminal: "RunCompleted", pendingTimers: [] }],
  [
    "r4",
    {
      runTreeOid: oid("f"),
      eventsOid: oid("0"),
      lastEventOid: oid("2"),
      maxFileSeq: 5,
      lastSeq: 5,
      terminal: null,
      pendingTimers: [
        { timerId: "s", fireAt: "2026-05-01T02:00:00.000Z", setSeq: 1, cron: "0 * * * *", timezone: "UTC", maxTicks: 9, slot: 2, jitterMs: 5000, owner: "sync", pausedAt: "2026-05-01T00:10:00.000Z" },
        { timerId: "u", fireAt: "2026-05-01T03:00:00.000Z", setSeq: 4, stepId: "wait" },
      ],
    },
  ],
];

describe("recovery index file", () => {
  it("reads back every summary it wrote: null events folders, ended runs, several timers with schedule fields", () => {
    const decoded = decodeRecoveryIndex(encodeRecoveryIndex(LIMIT, summaries), LIMIT);
    expect(decoded === null ? null : [...decoded]).toEqual(summaries);
  });

  it("reads back text beyond ASCII (a step id, a timer id) as written, byte for byte", () => {
    const wide: [string, RunSummary][] = [
      ["r5", { runTreeOid: oid("a"), eventsOid: oid("b"), lastEventOid: oid("1"), maxFileSeq: 1, lastSeq: 1, terminal: null, pendingTimers: [{ timerId: "tür-⏰", fireAt: "2026-05-01T01:00:00.000Z", setSeq: 1, stepId: "wärten 𝄞" }] }],
    ];
    const decoded = decodeRecoveryIndex(encodeRecoveryIndex(LIMIT, [...summaries, ...wide]), LIMIT);
    expect(decoded === null ? null : [...decoded]).toEqual([...summaries, ...wide]);
  });

  it("says which archive commit its runs were checked against, when it was told; not when it was not", () => {
    for (const archiveSha of [oid("c"), null]) {
      const header: { archiveSha?: string | null } = {};
      expect(decodeRecoveryIndex(encodeRecoveryIndex(LIMIT, summaries, { archiveSha }), LIMIT, header)).not.toBeNull();
      expect(header).toEqual({ archiveSha });
    }
    const header: { archiveSha?: string | null } = {};
    decodeRecoveryIndex(encodeRecoveryIndex(LIMIT, summaries), LIMIT, header);
    expect(header).toEqual({});
  });

  it("is no index when its columns disagree, when it has the per-run layout of version 1, or another limit", () => {
    const body = JSON.parse(Buffer.from(encodeRecoveryIndex(LIMIT, summaries)).toString("utf8")) as Record<string, unknown>;
    const broken = [
      { ...body, runTreeOids: (body.runTreeOids as string).slice(40) },
      { ...body, runNumbers: (body.runNumbers as number[]).slice(3) },
      { ...body, fireAts: (body.fireAts as string[]).slice(1) },
      { ...body, runNumbers: (body.runNumbers as number[]).map((n, i) => (i === 2 ? 5 : n)) },
      { ...body, fireAts: (body.fireAts as string[]).map(() => "not an instant") },
      { format: body.format, version: 1, runState: body.runState, maxEventBytes: LIMIT, runs: [["r1", oid("a"), oid("b"), 3, 3, null, []]] },
    ];
    for (const b of broken) expect(decodeRecoveryIndex(Buffer.from(JSON.stringify(b)), LIMIT)).toBeNull();
    expect(decodeRecoveryIndex(encodeRecoveryIndex(LIMIT, summaries), LIMIT - 1)).toBeNull();
  });
});
