/**
 * One retention pass over one deployment: the runs that ended longer ago than
 * `endedRunsAfterMs` leave the live tree at `main`, after their folders were copied, unchanged,
 * to the archive ref (`refs/archive/runs`, see src/workflow/run-archive.ts).
 *
 * Two commits, in this order, both through the store's write queue of the repository:
 * 1. the archive commit adds each due run's folder to the archive ref, file by file with the
 *    same bytes (so the same blob and folder tree oids);
 * 2. the retention commit on `main` removes each due run whose live folder is, under the repo
 *    lock, exactly the folder the archive holds (same tree oid); `validatePush` accepts a removal
 *    on that ground only.
 * After a retention commit the repository's recent packs are merged (`compactPacks`), so the
 * history of the runs that left is stored with its deltas.
 * A crash between or inside them loses nothing: the archive only grows, `main` only loses a run
 * the archive already holds, and the next pass finds the same runs due, finds them archived
 * already, and makes the retention commit.
 *
 * When a run ended: the `at` of its terminal event. A run whose terminal event has none (a log
 * written before this project stamped it, or by the original system) counts from the latest
 * instant among its events (`at`, a fire's `firedAt`); one with no instant at all is due at once:
 * archiving loses nothing and `runs show` still finds it.
 */
import { clockOf, type ClockOption } from "../time/clock-option.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import type { CommittedReads } from "../substrate/types.js";
import { parseRepoId } from "../workflow/ids.js";
import { runsPrefix } from "../workflow/paths.js";
import { ARCHIVE_REF, openArchive, reusedArchivedRunProblem } from "../workflow/run-archive.js";
import { forEachRunEvent } from "../workflow/run-log-summary.js";
import { missingObjectError } from "../workflow/run-log.js";
import { readRunOrReport, type UnreadableRun } from "../workflow/unreadable-runs.js";
import { isUnreadableObject } from "../substrate/object-store.js";
import { WorkflowHostError } from "../errors.js";
import type { RunEvent } from "../workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { createTimeSlicer } from "../time/time-slicer.js";

/** Default retention: runs that ended more than 7 days ago leave the live tree. */
export const DEFAULT_ENDED_RUNS_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Most runs one retention commit removes (default); the rest wait for the next pass. A commit
 * holds the repository's write queue while it is built and validated, and a fire commit due
 * meanwhile waits behind it: at 10,000 runs a commit that took seconds on a loaded machine and
 * made a cron series of a 2 s period skip slots; 1,000 keeps it a fraction of that.
 */
export const DEFAULT_MAX_RUNS_PER_COMMIT = 1_000;

/** What a pass remembers of a run folder, keyed by the folder's tree oid, between passes. */
export type RetentionCache = Map<string, { readonly oid: string; readonly endedAtMs: number | null }>;

/** `clock` (or the deprecated `nowMs`, epoch ms) is the host's clock: when runs ended is compared with it. */
export interface ArchiveEndedRunsOptions extends ClockOption {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly repoId: string;
  /** The live ref. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** A run that ended at least this long before now (`clock`) is due (ms, ≥ 0). */
  readonly endedRunsAfterMs: number;
  /** Most runs archived by this pass (default {@link DEFAULT_MAX_RUNS_PER_COMMIT}). */
  readonly maxRuns?: number;
  /** Largest event read (bytes, default 1 MiB). */
  readonly maxEventBytes?: number;
  /**
   * Run folders seen by earlier passes (by tree oid), so a pass reads only folders that changed.
   * Default: a fresh one (every folder is read).
   */
  readonly cache?: RetentionCache;
  /**
   * Awaited between units of the pass (a run folder read, copied, checked; a folder of a
   * commit edited), so a pass over tens of thousands of runs gives the event loop a turn.
   * Default: a time slicer of 10 ms slices (src/time/time-slicer.ts).
   */
  readonly pause?: () => Promise<void>;
}

export interface ArchiveEndedRunsResult {
  /** Runs removed from the live tree by this pass (now only in the archive), sorted. */
  readonly archived: readonly string[];
  /** Due runs left for a later pass (beyond `maxRuns`, or changed while archiving). */
  readonly remaining: number;
  /**
   * Due runs that cannot be archived, with why (they stay live; reported, never fatal); and every
   * run that could not be read whole — a folder, an event or another file of it missing or
   * damaged — with `code` `object_missing` or `object_corrupt` (its `reason` names the object):
   * whether it ended is not known from part of it, so it is never archived or removed on what
   * was read, and it is read again at the next pass.
   */
  readonly skipped: readonly { readonly runId: string; readonly reason: string; readonly code?: "object_missing" | "object_corrupt" }[];
  /** The archive ref's commit afterwards (null when it does not exist). */
  readonly archiveSha: string | null;
  /** The retention commit on the live ref, or null when nothing was removed. */
  readonly commitSha: string | null;
}

/**
 * Runs one retention pass (see the module comment).
 * @returns what was archived; see {@link ArchiveEndedRunsResult}
 * @throws repo_id_invalid, config_invalid (no clock); the store's errors (ref_locked, ref_conflict, …; object_corrupt
 *   for a missing or damaged `runs/` folder or root): nothing is lost, the next pass retries
 */
export async function archiveEndedRuns(opts: ArchiveEndedRunsOptions): Promise<ArchiveEndedRunsResult> {
  const repo = { kind: WORKFLOW_RUN_KIND, id: parseRepoId(opts.repoId) };
  const ref = opts.ref ?? DEFAULT_REF;
  const cache = opts.cache ?? new Map();
  const maxRuns = opts.maxRuns ?? DEFAULT_MAX_RUNS_PER_COMMIT;
  const cutoffMs = clockOf(opts, "archiveEndedRuns")().getTime() - opts.endedRunsAfterMs;
  const slicer = opts.pause === undefined ? createTimeSlicer() : null;
  const pause = opts.pause ?? (() => (slicer as { pause(): Promise<void> }).pause());
  const live = await opts.store.openCommittedReads(opts.principal, repo, ref);
  const due: { runId: string; oid: string }[] = [];
  const present = new Set<string>();
  // Runs skipped before the copy (an archived id pushed again, a run not read whole): never due.
  const notDue: Skipped[] = [];
  let archiveAtStart: Awaited<ReturnType<typeof openArchive>> | undefined;
  for (const entry of await live.listDir(runsPrefix.slice(0, -1))) {
    if (entry.type !== "tree") continue;
    await pause();
    present.add(entry.name);
    let known = cache.get(entry.name);
    if (known === undefined || known.oid !== entry.oid) {
      // A run not read whole is skipped and reported, and not remembered: read again next pass.
      const read = await readRunOrReport(entry.name, () => endedAtMs(live, entry.name, opts.maxEventBytes));
      const value = read.value ?? { endedAtMs: null, unreadable: read.unreadable };
      if (value.unreadable !== null) {
        cache.delete(entry.name);
        notDue.push(unreadableSkip(value.unreadable));
        continue;
      }
      known = { oid: entry.oid, endedAtMs: value.endedAtMs };
      cache.set(entry.name, known);
    }
    if (known.endedAtMs === null || known.endedAtMs > cutoffMs) continue;
    // An archived run's id pushed again: never archived (the archive holds the id), never due.
    archiveAtStart ??= await openArchive(opts.store, opts.principal, repo);
    const problem = await reusedArchivedRunProblem(archiveAtStart, entry.name, entry.oid);
    if (problem !== null) notDue.push({ runId: entry.name, reason: problem.error.message });
    else due.push({ runId: entry.name, oid: entry.oid });
  }
  for (const runId of cache.keys()) if (!present.has(runId)) cache.delete(runId);
  due.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
  const skipped: Skipped[] = [...notDue];
  const batch: { runId: string; oid: string; files: Map<string, Uint8Array> }[] = [];
  for (const run of due) {
    if (batch.length >= maxRuns) break;
    await pause();
    const files = new Map<string, Uint8Array>();
    const problem = await collectFiles(live, run.runId, `${runsPrefix}${run.runId}`, files);
    if (problem !== null) {
      // An object found unreadable while copying: nothing of the run is archived, nor remembered.
      if (typeof problem !== "string") cache.delete(run.runId);
      skipped.push(typeof problem === "string" ? { runId: run.runId, reason: problem } : unreadableSkip(problem));
    } else batch.push({ ...run, files });
  }
  const copySkipped = skipped.length - notDue.length;
  if (batch.length === 0) {
    return { archived: [], remaining: 0, skipped, archiveSha: await opts.store.resolveRef(opts.principal, repo, ARCHIVE_REF), commitSha: null };
  }

  const archivedWrite = await opts.store.writeTreeDelta<undefined>(opts.principal, repo, ARCHIVE_REF, {
    pause,
    message: `Archive ${batch.length} ended run${batch.length === 1 ? "" : "s"} of ${repo.id} (ended before ${new Date(cutoffMs).toISOString()})`,
    computeDelta: async (_parent, archive) => {
      const puts = new Map<string, Uint8Array>();
      for (const run of batch) {
        await pause();
        // Held already: a pass that crashed after its archive commit, or an earlier one.
        if ((await archive.treeOid(`${runsPrefix}${run.runId}`)) !== null) continue;
        for (const [path, bytes] of run.files) puts.set(path, bytes);
      }
      return puts.size === 0 ? null : { puts };
    },
  });

  const removed = await opts.store.writeTreeDelta<string[]>(opts.principal, repo, ref, {
    pause,
    message: `Retention: ${batch.length} run${batch.length === 1 ? "" : "s"} ended before ${new Date(cutoffMs).toISOString()} moved to ${ARCHIVE_REF}`,
    computeDelta: async (_parent, reads) => {
      const archive = await opts.store.openCommittedReads(opts.principal, repo, ARCHIVE_REF);
      const gone: string[] = [];
      for (const run of batch) {
        await pause();
        const folder = `${runsPrefix}${run.runId}`;
        const liveOid = await reads.treeOid(folder);
        if (liveOid !== null && liveOid === (await archive.treeOid(folder))) gone.push(run.runId);
      }
      return gone.length === 0 ? null : { deletes: gone.map((runId) => `${runsPrefix}${runId}`), result: gone };
    },
  });
  const archived = removed.committed ? (removed.result ?? []) : [];
  const archivedSet = new Set(archived);
  for (const run of batch) {
    if (!archivedSet.has(run.runId)) skipped.push({ runId: run.runId, reason: "its folder differs from the archived copy (changed while archiving, or archived before under the same id)" });
  }
  for (const runId of archived) cache.delete(runId);
  // A pass runs at a quiet moment: the recent packs are merged now, with their deltas.
  if (removed.committed) await opts.store.compactPacks?.(opts.principal, repo).catch(() => undefined);
  return {
    archived,
    remaining: due.length - copySkipped - archived.length,
    skipped,
    archiveSha: archivedWrite.commitSha,
    commitSha: removed.committed ? removed.commitSha : null,
  };
}

/** A run left live by a pass, with why; `code` for one that could not be read whole. */
type Skipped = ArchiveEndedRunsResult["skipped"][number];

/** How a pass reports a run it could not read whole. */
function unreadableSkip(run: UnreadableRun): Skipped {
  const code = run.error.code === "object_corrupt" ? "object_corrupt" : "object_missing";
  return { runId: run.runId, code, reason: `${run.path} cannot be read (${run.error.message}); the run stays live until it is restored` };
}

/**
 * When the run ended (epoch ms): the instant its last event names, else the latest any event
 * names; null while it has not ended, or when entries follow its terminal event. The log is streamed (a chunk of blobs at a time, no event
 * held), so a pass over runs of any length holds one chunk, not a whole log. `unreadable`: the
 * first object of the run that could not be read (then `endedAtMs` means nothing).
 * @throws as forEachRunEvent (object_missing, object_corrupt for the run's own folders)
 */
async function endedAtMs(reads: CommittedReads, runId: string, maxEventBytes: number | undefined): Promise<{ endedAtMs: number | null; unreadable: UnreadableRun | null }> {
  let last: RunEvent | undefined;
  let latest = Number.NEGATIVE_INFINITY;
  const summary = await forEachRunEvent(
    reads,
    runId,
    (event) => {
      last = event;
      const instant = instantOf(event);
      if (Number.isFinite(instant)) latest = Math.max(latest, instant);
    },
    maxEventBytes === undefined ? {} : { maxEventBytes },
  );
  const unreadable = summary.unreadable === null ? null : { runId, path: summary.unreadable.path, error: summary.unreadable.error };
  if (unreadable !== null || summary.state.terminal === null) return { endedAtMs: null, unreadable };
  // Entries after the terminal event (a pushed log; reported by check): the store takes a run
  // as ended only when its last entry is the terminal one, and would refuse the whole retention
  // commit over this run, so it stays live like a run that has not ended.
  if (summary.terminalSeq !== summary.maxFileSeq) return { endedAtMs: null, unreadable };
  const stamped = last === undefined ? Number.NaN : instantOf(last);
  return { endedAtMs: Number.isFinite(stamped) ? stamped : latest, unreadable };
}

/** The latest instant an event names about itself (`at`, or a fire's `firedAt`), or NaN. */
function instantOf(event: RunEvent): number {
  const at = typeof event["at"] === "string" ? Date.parse(event["at"]) : Number.NaN;
  const data = (event as { data?: { firedAt?: unknown } }).data;
  const firedAt = typeof data?.firedAt === "string" ? Date.parse(data.firedAt) : Number.NaN;
  if (Number.isFinite(at) && Number.isFinite(firedAt)) return Math.max(at, firedAt);
  return Number.isFinite(at) ? at : firedAt;
}

/**
 * Every file under `folder` (of run `runId`) into `files` (path → bytes).
 * @returns null; or why the folder cannot be copied byte for byte as plain files (a symlink, an
 *   executable or a gitlink: their modes would not survive the copy); or the run's object that
 *   could not be read (missing or damaged: nothing of the run may be copied then)
 */
async function collectFiles(reads: CommittedReads, runId: string, folder: string, files: Map<string, Uint8Array>, folderOid?: string): Promise<string | UnreadableRun | null> {
  let entries: Awaited<ReturnType<CommittedReads["listDir"]>>;
  try {
    entries = await reads.listDir(folder);
  } catch (error) {
    if (!isUnreadableObject(error)) throw error;
    return { runId, path: folder, error: missingObjectError(runId, folder, folderOid ?? objectOf(error), error) };
  }
  for (const entry of entries) {
    const path = `${folder}/${entry.name}`;
    if (entry.type === "tree") {
      const problem = await collectFiles(reads, runId, path, files, entry.oid);
      if (problem !== null) return problem;
    } else if (entry.type === "blob" && entry.mode === undefined) {
      try {
        files.set(path, await reads.readBlobByOid(entry.oid));
      } catch (error) {
        if (!isUnreadableObject(error)) throw error;
        return { runId, path, error: missingObjectError(runId, path, entry.oid, error) };
      }
    } else {
      return `${path} is not a plain file (mode ${entry.mode ?? entry.type}); it would not be archived unchanged`;
    }
  }
  return null;
}

/** The oid a store's `object_corrupt` names, or "". */
function objectOf(error: unknown): string {
  const oid = error instanceof WorkflowHostError ? error.data["oid"] : undefined;
  return typeof oid === "string" ? oid : "";
}
