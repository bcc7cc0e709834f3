/**
 * The naive baselines: what the original code did, over isomorphic-git's high-level calls
 * (`resolveRef`, `readCommit`, `readTree`, `readBlob`, `writeBlob`, `writeTree`, `commit`)
 * with node's fs and no shared cache. One timer, one commit: read the run's log to find the
 * next seq and check the timer is still armed, write the event blob, rewrite the four trees on
 * its path (including the whole `runs/` folder) and commit. Recovery reads every event blob.
 */
import fs from "node:fs";
import * as git from "isomorphic-git";

const REF = "refs/heads/main";
const AUTHOR = { name: "naive", email: "naive@localhost", timestamp: 1_767_225_600, timezoneOffset: 0 };

type TreeEntry = { mode: string; path: string; oid: string; type: "blob" | "tree" | "commit" };

async function readTree(gitdir: string, oid: string): Promise<TreeEntry[]> {
  return (await git.readTree({ fs, gitdir, oid })).tree as TreeEntry[];
}

function child(entries: readonly TreeEntry[], name: string): TreeEntry | undefined {
  return entries.find((e) => e.path === name);
}

function replaced(entries: readonly TreeEntry[], entry: TreeEntry): TreeEntry[] {
  return [...entries.filter((e) => e.path !== entry.path), entry];
}

interface NaiveEvent {
  seq: number;
  type: string;
  signalName?: string;
  signalId?: string;
  payload?: unknown;
  data?: { timerId?: string; fireAt?: string };
}

/** Every event of one run under the root tree `rootTree`, parsed, in seq order. */
async function readRunEvents(gitdir: string, rootTree: readonly TreeEntry[], runId: string): Promise<{ events: NaiveEvent[]; path: TreeEntry[][] }> {
  const runsEntry = child(rootTree, "runs");
  const runs = runsEntry === undefined ? [] : await readTree(gitdir, runsEntry.oid);
  const { events, run, files } = await readRunFiles(gitdir, runs, runId);
  return { events, path: [[...rootTree], runs, run, files] };
}

/** Every event of one run listed in the `runs/` folder `runs`, parsed, in seq order. */
async function readRunFiles(gitdir: string, runs: readonly TreeEntry[], runId: string): Promise<{ events: NaiveEvent[]; run: TreeEntry[]; files: TreeEntry[] }> {
  const runEntry = child(runs, runId);
  const run = runEntry === undefined ? [] : await readTree(gitdir, runEntry.oid);
  const eventsEntry = child(run, "events");
  const files = eventsEntry === undefined ? [] : await readTree(gitdir, eventsEntry.oid);
  const events: NaiveEvent[] = [];
  for (const file of files) {
    const { blob } = await git.readBlob({ fs, gitdir, oid: file.oid });
    events.push(JSON.parse(Buffer.from(blob).toString("utf8")) as NaiveEvent);
  }
  events.sort((a, b) => a.seq - b.seq);
  return { events, run, files };
}

/** Whether `timerId` is armed after `events` (a TimerSet not followed by its fire or cancel). */
function armed(events: readonly NaiveEvent[], timerId: string): boolean {
  let on = false;
  for (const e of events) {
    if (e.data?.timerId !== timerId) continue;
    if (e.type === "TimerSet") on = true;
    else if (e.type === "TimerFired" || e.type === "TimerCancelled") on = false;
  }
  return on;
}

/** Appends one event to a run in its own commit, rewriting every tree on the path. */
async function commitEvent(gitdir: string, head: string, path: TreeEntry[][], runId: string, seq: number, body: unknown, message: string): Promise<string> {
  const [root, runs, run, files] = path as [TreeEntry[], TreeEntry[], TreeEntry[], TreeEntry[]];
  const blob = await git.writeBlob({ fs, gitdir, blob: Buffer.from(JSON.stringify(body), "utf8") });
  const eventsOid = await git.writeTree({ fs, gitdir, tree: [...files, { mode: "100644", path: `${seq}.json`, oid: blob, type: "blob" }] });
  const runOid = await git.writeTree({ fs, gitdir, tree: replaced(run, { mode: "040000", path: "events", oid: eventsOid, type: "tree" }) });
  const runsOid = await git.writeTree({ fs, gitdir, tree: replaced(runs, { mode: "040000", path: runId, oid: runOid, type: "tree" }) });
  const rootOid = await git.writeTree({ fs, gitdir, tree: replaced(root, { mode: "040000", path: "runs", oid: runsOid, type: "tree" }) });
  return git.commit({ fs, gitdir, ref: REF, message, author: AUTHOR, tree: rootOid, parent: [head] });
}

async function tipTree(gitdir: string): Promise<{ head: string; root: TreeEntry[] }> {
  const head = await git.resolveRef({ fs, gitdir, ref: REF });
  const { commit } = await git.readCommit({ fs, gitdir, oid: head });
  return { head, root: await readTree(gitdir, commit.tree) };
}

/**
 * Fires one timer the naive way: one commit holding its TimerFired.
 * @returns false when the timer was not armed (nothing committed)
 */
export async function naiveFire(gitdir: string, runId: string, timerId: string, scheduledFor: string, firedAt: string): Promise<boolean> {
  const { head, root } = await tipTree(gitdir);
  const { events, path } = await readRunEvents(gitdir, root, runId);
  if (!armed(events, timerId)) return false;
  const seq = (events.at(-1)?.seq ?? 0) + 1;
  await commitEvent(gitdir, head, path, runId, seq, { seq, type: "TimerFired", at: firedAt, data: { timerId, scheduledFor, firedAt } }, `Fire ${timerId} of ${runId}`);
  return true;
}

/** Delivers a signal the naive way: one commit holding its SignalReceived. */
export async function naiveDeliver(gitdir: string, runId: string, signalName: string, signalId: string, payload: unknown): Promise<number> {
  const { head, root } = await tipTree(gitdir);
  const { events, path } = await readRunEvents(gitdir, root, runId);
  const seq = (events.at(-1)?.seq ?? 0) + 1;
  await commitEvent(gitdir, head, path, runId, seq, { seq, type: "SignalReceived", signalName, signalId, payload, at: new Date().toISOString() }, `Signal ${signalName} to ${runId}`);
  return seq;
}

/**
 * The naive awaiter: polls the ref every `pollMs`; when it moved, re-reads the run's log and
 * resolves with the first SignalReceived of `signalName` whose id is not in `seen`.
 */
export async function naiveAwaitSignal(gitdir: string, runId: string, signalName: string, seen: Set<string>, pollMs: number, signal: AbortSignal): Promise<string> {
  let lastHead: string | null = null;
  while (!signal.aborted) {
    let tip: { head: string; root: TreeEntry[] };
    try {
      tip = await tipTree(gitdir);
    } catch {
      // isomorphic-git rewrites the ref file in place: a read racing the other process's commit
      // can find it empty. A poller looks again at its next tick.
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      continue;
    }
    const { head, root } = tip;
    if (head !== lastHead) {
      lastHead = head;
      const { events } = await readRunEvents(gitdir, root, runId);
      const hit = events.find((e) => e.type === "SignalReceived" && e.signalName === signalName && e.signalId !== undefined && !seen.has(e.signalId));
      if (hit?.signalId !== undefined) {
        seen.add(hit.signalId);
        return hit.signalId;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  throw new Error("aborted");
}

/**
 * Naive recovery: walks every run at the tip and reads every event blob, then folds the
 * pending timers. @returns counts, to check it did the same work as ours
 */
export async function naiveRecover(gitdir: string): Promise<{ runs: number; events: number; pending: number }> {
  const { root } = await tipTree(gitdir);
  const runsEntry = child(root, "runs");
  const runs = runsEntry === undefined ? [] : await readTree(gitdir, runsEntry.oid);
  let events = 0;
  let pending = 0;
  for (const run of runs) {
    const log = await readRunFiles(gitdir, runs, run.path);
    events += log.events.length;
    const on = new Set<string>();
    for (const e of log.events) {
      const timerId = e.data?.timerId;
      if (timerId === undefined) continue;
      if (e.type === "TimerSet") on.add(timerId);
      else if (e.type === "TimerFired" || e.type === "TimerCancelled") on.delete(timerId);
    }
    pending += on.size;
  }
  return { runs: runs.length, events, pending };
}
