/**
 * What appends remember of the logs they decided on, per store: each run's log with the oid of
 * the `events` tree it was read at, so the next append to a log reads only what others added.
 * Whether others only added is checked on the new folder's stored bytes (see events-folder.ts:
 * its bytes less the names above the known log's last seq hash to the known folder), so an
 * append to a run of 200,000 events neither lists the folder as objects nor keeps a map of its
 * names.
 */
import type { CommittedReads, DirEntry, RepoStore } from "../substrate/types.js";
import { isUnreadableObject } from "../substrate/object-store.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { firstAbove, openEventsFolder } from "./events-folder.js";
import { sharedParsedEvents } from "./parsed-event-cache.js";
import { nextSeqAfter, readRunLog, withLimit, type RunLog } from "./run-log.js";
import { applyEvent } from "./run-state.js";
import type { RunEvent } from "./types.js";

/** A run's log as an append last saw it, with the tree it was read from. */
export interface KnownLog {
  /** Oid of `runs/<runId>/events` the log was read at; null until known. */
  readonly eventsOid: string | null;
  /** No bad files, no rule breaks, not ended: only such a log is extended in place. */
  readonly clean: boolean;
  readonly log: RunLog;
}

/** Most events kept across the logs of one store (the least recently used logs go first). */
const APPEND_CACHE_EVENTS = 250_000;

/**
 * The logs appends decided on, per run, most recently used last. A log is a pure function of
 * its events tree, so a cached one is reused only for the very tree oid it was read at, and
 * extended only when the tree gained new files and nothing else changed.
 */
class AppendLogCache {
  readonly #logs = new Map<string, KnownLog>();
  #events = 0;

  async read(key: string, reads: CommittedReads, runId: string, folder: string, maxEventBytes: number | undefined): Promise<KnownLog> {
    let oid: string | null;
    try {
      oid = await reads.treeOid(folder);
    } catch (error) {
      // The run folder cannot be read: readRunLog below names it as the run's (or re-throws a
      // lost `runs/` folder as the store raised it).
      if (!isUnreadableObject(error)) throw error;
      oid = null;
    }
    const hit = this.#logs.get(key);
    if (hit !== undefined && oid !== null && hit.eventsOid === oid) {
      this.remember(key, hit);
      return hit;
    }
    if (hit !== undefined && oid !== null && hit.clean) {
      const extended = await extendLog(hit, reads, runId, folder, oid, maxEventBytes);
      if (extended !== null) {
        this.remember(key, extended);
        return extended;
      }
    }
    const log = await readRunLog(reads, runId, withLimit({}, maxEventBytes));
    const known: KnownLog = { eventsOid: oid, clean: log.bad.length === 0 && log.problems.length === 0 && log.state.terminal === null, log };
    if (oid !== null) this.remember(key, known);
    return known;
  }

  remember(key: string, known: KnownLog): void {
    const old = this.#logs.get(key);
    if (old !== undefined) {
      this.#logs.delete(key);
      this.#events -= old.log.events.length;
    }
    this.#logs.set(key, known);
    this.#events += known.log.events.length;
    for (const [k, v] of this.#logs) {
      if (this.#events <= APPEND_CACHE_EVENTS || k === key) break;
      this.#logs.delete(k);
      this.#events -= v.log.events.length;
    }
  }
}

/**
 * `known` plus the files added to its tree since, when that is all that changed and the added
 * files are the next seqs, valid events, in order; null otherwise (the caller reads it whole).
 */
async function extendLog(known: KnownLog, reads: CommittedReads, runId: string, folder: string, oid: string, maxEventBytes: number | undefined): Promise<KnownLog | null> {
  if (known.eventsOid === null) return null;
  const listed = await openEventsFolder(reads, folder, oid);
  if (!(await listed.onlyAddedAbove(known.log.maxFileSeq, known.eventsOid))) return null;
  // In seq order: the folder's index is.
  const added: { seq: number; entry: DirEntry }[] = [];
  for (let k = firstAbove(listed.seqs, known.log.maxFileSeq); k < listed.seqs.length; k += 1) {
    const entry = listed.entry(listed.at[k] as number);
    if (entry.type !== "blob" || !isRegularFileMode(entry.mode)) return null;
    added.push({ seq: listed.seqs[k] as number, entry });
  }
  let { state, maxFileSeq } = known.log;
  const events: RunEvent[] = [];
  for (const { seq, entry } of added) {
    if (seq !== maxFileSeq + 1 || state.terminal !== null) return null;
    let event: RunEvent;
    try {
      event = sharedParsedEvents.parse(entry.oid, await reads.readBlobByOid(entry.oid), withLimit({ path: `${folder}/${entry.name}`, expectedSeq: seq }, maxEventBytes));
    } catch {
      return null;
    }
    state = applyEvent(state, event);
    events.push(event);
    maxFileSeq = seq;
  }
  return { eventsOid: oid, clean: state.terminal === null, log: { ...known.log, events: known.log.events.concat(events), maxFileSeq, nextSeq: nextSeqAfter(maxFileSeq), state } };
}

const appendLogCaches = new WeakMap<RepoStore, AppendLogCache>();

/** The append log cache of one store (a store is one data dir, so keys need no data dir). */
export function appendLogCacheOf(store: RepoStore): AppendLogCache {
  let cache = appendLogCaches.get(store);
  if (cache === undefined) {
    cache = new AppendLogCache();
    appendLogCaches.set(store, cache);
  }
  return cache;
}
