/**
 * What appends remember of the logs they decided on, per store: each run's log with the oid of
 * the `events` tree it was read at, so the next append to a log reads only what others added.
 */
import type { CommittedReads, RepoStore } from "../substrate/types.js";
import { isRegularFileMode } from "../substrate/tree-object.js";
import { parseEventPathName } from "./paths.js";
import { sharedParsedEvents } from "./parsed-event-cache.js";
import { nextSeqAfter, readRunLog, withLimit, type RunLog } from "./run-log.js";
import { applyEvent } from "./run-state.js";
import type { RunEvent } from "./types.js";

/** A run's log as an append last saw it, with the tree it was read from. */
export interface KnownLog {
  /** Oid of `runs/<runId>/events` the log was read at; null until known. */
  readonly eventsOid: string | null;
  /** Entry name → blob oid of every entry in that tree. */
  readonly names: ReadonlyMap<string, string>;
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
    const oid = await reads.treeOid(folder);
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
    const names = new Map<string, string>();
    if (oid !== null) for (const entry of await reads.listDir(folder)) names.set(entry.name, entry.oid);
    const known: KnownLog = { eventsOid: oid, names, clean: log.bad.length === 0 && log.problems.length === 0 && log.state.terminal === null, log };
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
  const entries = await reads.listDir(folder);
  const added: { seq: number; entry: (typeof entries)[number] }[] = [];
  let kept = 0;
  for (const entry of entries) {
    const before = known.names.get(entry.name);
    if (before === undefined) {
      const seq = parseEventPathName(entry.name);
      if (seq === null || entry.type !== "blob" || !isRegularFileMode(entry.mode)) return null;
      added.push({ seq, entry });
    } else if (before !== entry.oid) return null;
    else kept += 1;
  }
  if (kept !== known.names.size) return null;
  added.sort((a, b) => a.seq - b.seq);
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
  const names = new Map(known.names);
  for (const { entry } of added) names.set(entry.name, entry.oid);
  return { eventsOid: oid, names, clean: state.terminal === null, log: { ...known.log, events: [...known.log.events, ...events], maxFileSeq, nextSeq: nextSeqAfter(maxFileSeq), state } };
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
