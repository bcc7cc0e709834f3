/**
 * A run's `events/` folder as a `git push` may leave it, and the check the run-log property
 * (and its kept counterexamples) runs on it: commit it unvalidated, read it back, append to it.
 */
import fc from "fast-check";
import { expect } from "vitest";
import { createMemoryRepoStore } from "../../../src/testing/memory-store.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { allowAll } from "../../../src/substrate/allow-all.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { isTerminalEventType } from "../../../src/workflow/event-schemas.js";
import { readRunLog } from "../../../src/workflow/run-log.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";

export type Content = "timer" | "signal" | "step" | "terminal" | "garbage" | "wrong-seq" | "folder";
export interface Entry {
  readonly name: string;
  readonly content: Content;
}

export const entryArb: fc.Arbitrary<Entry> = fc.record({
  name: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 7 }).map((n) => `${n}.json`) },
    { weight: 1, arbitrary: fc.constantFrom("02.json", "x.txt", "1.JSON", "events.jsonl.bak") },
  ),
  content: fc.constantFrom<Content>("timer", "timer", "signal", "step", "step", "terminal", "garbage", "wrong-seq", "folder"),
});

export const folderArb = fc.uniqueArray(entryArb, { selector: (e) => e.name, maxLength: 8 });

function bytesOf(entry: Entry): string {
  const seq = Number(/^(\d+)\.json$/.exec(entry.name)?.[1] ?? 0);
  switch (entry.content) {
    case "timer":
      return JSON.stringify({ seq, type: "TimerSet", data: { timerId: `t${seq}`, fireAt: "2026-05-01T10:00:00Z" } });
    case "signal":
      return JSON.stringify({ seq, type: "SignalReceived", signalName: "go", signalId: `s${seq}`, payload: null, at: "2026-05-01T10:00:00Z" });
    case "step":
      return JSON.stringify({ seq, type: "StepDone" });
    case "terminal":
      return JSON.stringify({ seq, type: "RunCompleted" });
    case "garbage":
      return "{not json";
    case "wrong-seq":
      return JSON.stringify({ seq: seq + 100, type: "StepDone" });
    case "folder":
      return "";
  }
}

/** A validating store and, on the same repos, one that takes anything (a `git push`). */
export function stores(): { store: RepoStore; raw: RepoStore } {
  const { store, fs } = createMemoryRepoStore();
  const raw = createRepoStore({ dataDir: "/data", fs, kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: "deployments" }], authorize: allowAll, watch: false });
  return { store, raw };
}

async function pushFolder(raw: RepoStore, repoId: string, entries: readonly Entry[]): Promise<void> {
  const files: Record<string, string> = { "runs/other/events/1.json": JSON.stringify({ seq: 1, type: "StepDone" }) };
  for (const entry of entries) {
    const path = `runs/r/events/${entry.name}`;
    if (entry.content === "folder") files[`${path}/1.json`] = JSON.stringify({ seq: 1, type: "StepDone" });
    else files[path] = bytesOf(entry);
  }
  await raw.writeTree(null, { kind: WORKFLOW_RUN_KIND, id: repoId }, "main", { files, message: "pushed" });
}

/**
 * Commits `entries` as run `r` of a new repo `repoId` without validation, then checks the
 * reader and an append against it (see the property's comment for what must hold).
 */
export async function checkPushedFolder(store: RepoStore, raw: RepoStore, repoId: string, entries: readonly Entry[]): Promise<void> {
  const rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
  await store.initRepo(null, rid);
  await pushFolder(raw, repoId, entries);
  const log = await readRunLog(await store.openCommittedReads(null, rid, "main"), "r");

  // Every entry is an event or reported; events are the valid ones up to the first terminal.
  const reported = new Set([...log.bad, ...log.problems].map((b) => b.path.slice("runs/r/events/".length)));
  const asEvents = new Set(log.events.map((e) => `${e.seq}.json`));
  for (const entry of entries) expect(asEvents.has(entry.name) || reported.has(entry.name), entry.name).toBe(true);
  const seqNamed = entries.filter((e) => /^(0|[1-9][0-9]*)\.json$/.test(e.name));
  const valid = seqNamed
    .filter((e) => ["timer", "signal", "step", "terminal"].includes(e.content))
    .map((e) => Number(e.name.slice(0, -5)))
    .sort((a, b) => a - b);
  const terminalSeq = seqNamed
    .filter((e) => e.content === "terminal")
    .map((e) => Number(e.name.slice(0, -5)))
    .sort((a, b) => a - b)[0];
  expect(log.events.map((e) => e.seq)).toEqual(valid.filter((s) => terminalSeq === undefined || s <= terminalSeq));
  expect(log.maxFileSeq).toBe(Math.max(-1, ...seqNamed.map((e) => Number(e.name.slice(0, -5)))));
  expect(log.state.terminal !== null).toBe(log.events.some((e) => isTerminalEventType(e.type)));

  // An append lands right after everything named like an event, or is refused for an ended run.
  const append = appendRunEvents({ store, principal: null, repoId, runId: "r", message: "append", decide: () => ({ append: [{ type: "StepDone" }], result: undefined }) });
  if (log.state.terminal !== null) {
    await expect(append).rejects.toMatchObject({ code: "event_invalid" });
    return;
  }
  expect(await append).toMatchObject({ committed: true });
  const after = await readRunLog(await store.openCommittedReads(null, rid, "main"), "r");
  expect(after.events.at(-1)?.seq).toBe(Math.max(log.maxFileSeq + 1, 1));
}
