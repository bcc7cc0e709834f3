import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import type { CommittedReads, DirEntry, PathChange, PushContext } from "../../../src/substrate/types.js";
import { serializeEvent } from "../../../src/workflow/events.js";
import { WORKFLOW_RUN_DIRECTORY_PREFIX, WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import type { RunEvent } from "../../../src/workflow/types.js";

type Files = ReadonlyMap<string, Uint8Array>;

const oidOf = (bytes: Uint8Array): string => createHash("sha1").update(bytes).digest("hex");

/** Reads over an in-memory tree given as path → bytes; records every path it was asked about. */
function fakeReads(files: Files, seen: string[] = []): CommittedReads {
  const byOid = new Map([...files.values()].map((b) => [oidOf(b), b]));
  return {
    commitSha: null,
    async listDir(path: string): Promise<readonly DirEntry[]> {
      seen.push(`list:${path}`);
      const prefix = path === "" ? "" : `${path}/`;
      const entries = new Map<string, DirEntry>();
      for (const [p, bytes] of files) {
        if (!p.startsWith(prefix)) continue;
        const [name, ...rest] = p.slice(prefix.length).split("/");
        if (name === undefined) continue;
        entries.set(name, rest.length === 0 ? { name, type: "blob", oid: oidOf(bytes) } : { name, type: "tree", oid: `tree:${prefix}${name}` });
      }
      return [...entries.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    async readBlob(path: string): Promise<Uint8Array | null> {
      seen.push(`read:${path}`);
      return files.get(path) ?? null;
    },
    async readBlobByOid(oid: string): Promise<Uint8Array> {
      const bytes = byOid.get(oid);
      if (bytes === undefined) throw new WorkflowHostError("object_corrupt", `no blob ${oid}`, { oid });
      return bytes;
    },
    async treeOid(path: string): Promise<string | null> {
      seen.push(`oid:${path}`);
      if (files.has(path)) return oidOf(files.get(path) ?? new Uint8Array());
      return [...files.keys()].some((p) => p.startsWith(`${path}/`)) ? `tree:${path}` : null;
    },
  };
}

/** A push from `prior` (null: unborn ref) to `next`, with changes computed by diffing. */
function pushContext(prior: Files | null, next: Files, seen: string[] = []): PushContext {
  const before = prior ?? new Map<string, Uint8Array>();
  const changes: PathChange[] = [];
  for (const [path, bytes] of next) {
    const old = before.get(path);
    if (old === undefined) changes.push({ path, oid: oidOf(bytes), status: "added" });
    else if (oidOf(old) !== oidOf(bytes)) changes.push({ path, oid: oidOf(bytes), status: "modified" });
  }
  for (const [path, bytes] of before) if (!next.has(path)) changes.push({ path, oid: oidOf(bytes), status: "deleted" });
  return {
    repoId: { kind: WORKFLOW_RUN_KIND, id: "dep1" },
    ref: "refs/heads/main",
    prior: prior === null ? null : fakeReads(prior, seen),
    prospective: fakeReads(next, seen),
    changes,
    changedPathPrefixes: [...new Set(changes.map((c) => c.path.slice(0, c.path.lastIndexOf("/") + 1)))],
  };
}

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
const set = (seq: number, timerId = `t${seq}`, extra: Record<string, unknown> = {}): RunEvent =>
  ({ seq, type: "TimerSet", data: { timerId, fireAt: "2026-05-01T10:00:00.000Z", ...extra } }) as RunEvent;
const file = (runId: string, event: RunEvent): [string, Uint8Array] => [`runs/${runId}/events/${event.seq}.json`, serializeEvent(event)];
/** An event file written as-is, bypassing serializeEvent's checks (as `git push` could). */
const rawFile = (runId: string, event: RunEvent): [string, Uint8Array] => [`runs/${runId}/events/${event.seq}.json`, enc(JSON.stringify(event))];
const tree = (...entries: [string, Uint8Array][]): Map<string, Uint8Array> => new Map(entries);
const plus = (base: Files, ...entries: [string, Uint8Array][]): Map<string, Uint8Array> => new Map([...base, ...entries]);

async function rejection(ctx: PushContext, opts: { maxEventBytes?: number } = {}): Promise<WorkflowHostError> {
  const handler = workflowRunKind(opts);
  try {
    await handler.validatePush?.(ctx);
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowHostError);
    return error as WorkflowHostError;
  }
  throw new Error("expected validatePush to refuse the push");
}

async function accepts(ctx: PushContext, opts: { maxEventBytes?: number } = {}): Promise<void> {
  await expect(workflowRunKind(opts).validatePush?.(ctx)).resolves.toBeUndefined();
}

const base = tree(file("r1", set(1)), file("r1", set(2)));

describe("workflowRunKind", () => {
  it("names the kind and its folder", () => {
    const handler = workflowRunKind();
    expect(handler.kind).toBe("workflow-run");
    expect(handler.directoryPrefix).toBe("deployments");
    expect(WORKFLOW_RUN_DIRECTORY_PREFIX).toBe("deployments");
  });

  it("accepts the first events of a new run, from seq 1 or from seq 0", async () => {
    await accepts(pushContext(null, tree(file("r1", set(1)), file("r1", set(2)))));
    await accepts(pushContext(new Map(), tree(file("r0", set(0)), file("r0", set(1)))));
  });

  it("accepts appends that continue the log densely", async () => {
    await accepts(pushContext(base, plus(base, file("r1", set(3)), file("r1", set(4)))));
  });

  it("ignores paths outside runs/", async () => {
    await accepts(pushContext(base, plus(base, ["README.md", enc("hello")], ["config/x.json", enc("{")])));
  });

  it.each([
    ["a gap", () => plus(base, file("r1", set(4)))],
    ["a reused seq at the start", () => tree(file("r9", set(2)))],
  ])("refuses %s in the seqs", async (_name, next) => {
    const error = await rejection(pushContext(base, next()));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toHaveProperty("seq");
  });

  it("refuses a body seq that differs from the file name", async () => {
    const error = await rejection(pushContext(base, plus(base, ["runs/r1/events/3.json", serializeEvent(set(7))])));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toMatchObject({ path: "runs/r1/events/3.json", seq: 7, expectedSeq: 3 });
  });

  it("refuses a modified event, naming its path", async () => {
    const error = await rejection(pushContext(base, plus(base, file("r1", set(2, "other")))));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toEqual({ path: "runs/r1/events/2.json", seq: 2 });
  });

  it("refuses a deleted event", async () => {
    const next = new Map(base);
    next.delete("runs/r1/events/2.json");
    const error = await rejection(pushContext(base, next));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toEqual({ path: "runs/r1/events/2.json", seq: 2 });
  });

  it.each(["runs/r1/notes.txt", "runs/r1/events/03.json", "runs/r.1/events/3.json", "runs/r1/events/3.json/x", "runs/x"])(
    "refuses the path %s under runs/",
    async (path) => {
      const error = await rejection(pushContext(base, plus(base, [path, serializeEvent(set(3))])));
      expect(error.code).toBe("event_invalid");
      expect(error.data).toEqual({ path, seq: null });
    },
  );

  // Case G3's bad file, written through the store this time.
  it("refuses an event that is not JSON", async () => {
    const error = await rejection(pushContext(base, plus(base, ["runs/r1/events/3.json", enc('{"type":"TimerSet",}')])));
    expect(error.code).toBe("event_invalid");
    expect(error.data).toMatchObject({ path: "runs/r1/events/3.json", seq: 3 });
  });

  it.each([
    ["a fireAt that does not exist", { fireAt: "2026-02-30T00:00:00Z" }, "time_invalid"],
    ["a cron with no future tick", { cron: "0 0 30 2 *" }, "cron_invalid"],
    ["a cron in an unknown zone", { cron: "0 0 * * *", timezone: "America/New_Yrok" }, "cron_invalid"],
    ["a cron with 61 minutes", { cron: "61 * * * *" }, "cron_invalid"],
  ])("refuses a TimerSet with %s (case I4)", async (_name, extra, code) => {
    const error = await rejection(pushContext(base, plus(base, rawFile("r1", set(3, "x", extra)))));
    expect(error.code).toBe(code);
    expect(error.data).toMatchObject({ path: "runs/r1/events/3.json", seq: 3 });
  });

  it("accepts a valid cron TimerSet", async () => {
    await accepts(pushContext(base, plus(base, file("r1", set(3, "c", { cron: "*/5 * * * *", timezone: "Europe/Rome", misfire: "skip" })))));
  });

  it("refuses anything after a terminal event, in the same push or an earlier one", async () => {
    const same = await rejection(pushContext(base, plus(base, file("r1", { seq: 3, type: "RunCompleted" }), file("r1", set(4)))));
    expect(same.code).toBe("event_invalid");
    expect(same.data).toEqual({ path: "runs/r1/events/4.json", seq: 4 });
    const ended = plus(base, file("r1", { seq: 3, type: "RunFailed" }));
    const later = await rejection(pushContext(ended, plus(ended, file("r1", { seq: 4, type: "Note" }))));
    expect(later.data).toEqual({ path: "runs/r1/events/4.json", seq: 4 });
  });

  it("accepts an event of exactly maxEventBytes and refuses one byte more", async () => {
    const event = set(3);
    const size = serializeEvent(event).length;
    await accepts(pushContext(base, plus(base, file("r1", event))), { maxEventBytes: size });
    const error = await rejection(pushContext(base, plus(base, file("r1", event))), { maxEventBytes: size - 1 });
    expect(error.code).toBe("payload_too_large");
    expect(error.data).toMatchObject({ path: "runs/r1/events/3.json", seq: 3 });
  });

  it("reads only the runs the push changes", async () => {
    let big = tree(...Array.from({ length: 50 }, (_, i) => file("big", set(i + 1))));
    big = plus(big, ...base);
    const seen: string[] = [];
    await accepts(pushContext(big, plus(big, file("r1", set(3))), seen));
    expect(seen.some((s) => s.includes("runs/big"))).toBe(false);
    expect(seen).toContain("list:runs/r1/events");
  });

  it("reports the first violation in run then seq order", async () => {
    const next = plus(base, file("r1", set(3)), ["runs/r1/events/4.json", enc("{")], ["runs/r2/events/2.json", serializeEvent(set(2))]);
    const error = await rejection(pushContext(base, next));
    expect(error.data).toMatchObject({ path: "runs/r1/events/4.json", seq: 4 });
  });

  describe("compaction", () => {
    const ended = plus(base, file("r1", { seq: 3, type: "RunCompleted" }));
    const events = [...ended.entries()].filter(([p]) => p.startsWith("runs/r1/events/")).sort((a, b) => a[0].localeCompare(b[0]));
    const jsonl = enc(events.map(([, bytes]) => `${new TextDecoder().decode(bytes)}\n`).join(""));
    const compacted = (bytes: Uint8Array): Map<string, Uint8Array> => tree(["runs/r1/events.jsonl", bytes]);

    it("accepts replacing an ended run's event files by their exact concatenation", async () => {
      await accepts(pushContext(ended, compacted(jsonl)));
    });

    it("refuses a compacted log that differs from the events", async () => {
      const error = await rejection(pushContext(ended, compacted(enc(new TextDecoder().decode(jsonl).trimEnd()))));
      expect(error.code).toBe("event_invalid");
      expect(error.data).toEqual({ path: "runs/r1/events.jsonl", seq: null });
    });

    it("refuses compacting a run that has not ended", async () => {
      const text = enc([...base.values()].map((b) => `${new TextDecoder().decode(b)}\n`).join(""));
      expect((await rejection(pushContext(base, compacted(text)))).code).toBe("event_invalid");
    });

    it("refuses compaction that keeps some event files", async () => {
      const next = plus(compacted(jsonl), ...events.slice(0, 1));
      expect((await rejection(pushContext(ended, next))).code).toBe("event_invalid");
    });

    it("refuses events appended to a compacted run, and edits of the compacted log", async () => {
      const done = compacted(jsonl);
      const appended = await rejection(pushContext(done, plus(done, file("r1", set(1)))));
      expect(appended.data).toEqual({ path: "runs/r1/events/1.json", seq: 1 });
      const edited = await rejection(pushContext(done, compacted(enc("{}\n"))));
      expect(edited.data).toEqual({ path: "runs/r1/events.jsonl", seq: null });
    });
  });
});
