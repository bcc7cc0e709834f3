/**
 * The scheduler's derived recovery index: per run, what recovery needs from its log (the
 * pending timers, whether it ended, its last seqs), keyed by the oid of the run's tree
 * `runs/<runId>`.
 *
 * Why: a cold recovery reads and validates every event of every run (100 000 events take
 * seconds); but a run's state is a pure function of its tree, and a tree oid names its content
 * forever. So after a recovery the scheduler stores each run's summary under its tree oid, and
 * the next start reads only the runs whose tree oid changed — the `runs/` listing is all it
 * needs to know which.
 *
 * Trust: a summary is used only when the run's tree oid at the tip equals the one it was
 * computed from; anything else about the file is checked too (its checksum by the store, its
 * format, version, reducer version and `maxEventBytes`, every field's type) and any mismatch
 * makes the whole index absent: a full walk, never a guess. Runs with bad events are never
 * stored, so their reports repeat at every start as they did without the index.
 *
 * Bump {@link RUN_STATE_VERSION} whenever `reduceRunState` changes what it derives from a log:
 * summaries made by the old reducer are then ignored.
 */
import { isAscii } from "node:buffer";
import { isTerminalEventType } from "./event-shapes.js";
import type { PendingTimer, TerminalEventType } from "./types.js";

/**
 * Name of the derived file (see `RepoStore.writeDerived`). Kept across layout versions (the
 * version is inside), so a new layout replaces the old file instead of leaving it beside.
 */
export const RECOVERY_INDEX_FILE = "run-index.v1.json";
/**
 * Layout version of the file. 3: each run's last event blob oid (`lastEventOids`), which a start
 * checks is stored before it trusts a row (design notes §74); a file of version 2 is not used,
 * so the first start after the change reads every log once.
 */
const FORMAT_VERSION = 3;
/** Version of the RunState semantics the summaries were computed with. */
export const RUN_STATE_VERSION = 2;
const FORMAT_NAME = "workflow-host run index";
/** Length of a hex object id: oids are stored end to end in one string per column. */
const OID_LENGTH = 40;
/** Stands for a null `eventsOid` in the joined column (never a hex oid). */
const NO_OID = "-".repeat(OID_LENGTH);

/** What recovery keeps of one run. */
export interface RunSummary {
  /** Oid of `runs/<runId>` the summary was computed from. */
  readonly runTreeOid: string;
  /** Oid of `runs/<runId>/events`, or null when the run has no events folder. */
  readonly eventsOid: string | null;
  /** Blob oid of the event file `<maxFileSeq>.json` (the log's last), or null when none or unknown. */
  readonly lastEventOid?: string | null;
  readonly maxFileSeq: number;
  readonly lastSeq: number;
  readonly terminal: TerminalEventType | null;
  readonly pendingTimers: readonly PendingTimer[];
}

/**
 * The file's body: one column per field, not one array per run. A warm start of 100 000 runs
 * parsed 700 000 small arrays and strings out of the per-run layout (version 1), and that parse
 * and the garbage it left were most of the start; columns are a handful of arrays, and the oids
 * (most of the bytes) are two long strings cut into 40-character slices.
 */
interface Columns {
  readonly format: string;
  readonly version: number;
  readonly runState: number;
  readonly maxEventBytes: number;
  /**
   * Oid of the `runs/` folder these rows are every run of, when they are (no run left out for
   * bad events, no stray entry), else null or absent: a start at a tip with this very folder
   * restores every run without listing it.
   */
  readonly runsTreeOid?: string | null;
  /**
   * The commit of `refs/archive/runs` every row was checked against (null: there was none), or
   * absent when unknown: a start whose archive ref is still at this commit need not look any
   * restored run up in the archive again (the archive only grows by the host's retention commits).
   */
  readonly archiveSha?: string | null;
  /**
   * `CommittedReads.storeMark` when the file was written: a start that finds the same mark knows
   * every object the rows rest on is still stored (design notes §74). Absent: not known.
   */
  readonly storeMark?: string;
  readonly runIds: string[];
  /** `runTreeOid` of every run, end to end. */
  readonly runTreeOids: string;
  /** `eventsOid` of every run, end to end ({@link NO_OID} for null). */
  readonly eventsOids: string;
  /** `lastEventOid` of every run, end to end ({@link NO_OID} for null). */
  readonly lastEventOids: string;
  /** Per run: maxFileSeq, lastSeq, number of pending timers. */
  readonly runNumbers: number[];
  /** Per run: its terminal event type, or null. */
  readonly terminals: (string | null)[];
  /** Per pending timer, runs in order: timerId, fireAt, setSeq, stepId (0 for none), other fields (0 for none). */
  readonly timerIds: string[];
  readonly fireAts: string[];
  readonly setSeqs: number[];
  readonly stepIds: (0 | string)[];
  readonly extras: (0 | Record<string, string | number>)[];
}

const EXTRA_KEYS = new Set(["cron", "timezone", "misfire", "startAt", "endAt", "owner", "pausedAt"]);
/** Schedule fields held as numbers (src/workflow/schedule/). */
const NUMBER_KEYS = new Set(["maxTicks", "slot", "jitterMs"]);

/** A timer's schedule fields (its stepId has a column of its own: most timers have one and nothing else). */
function extraOf(timer: PendingTimer): 0 | Record<string, string | number> {
  let extra: Record<string, string | number> | null = null;
  // The timer's own fields (four or so), not every schedule field looked up on each timer.
  for (const key in timer) {
    if (!EXTRA_KEYS.has(key) && !NUMBER_KEYS.has(key)) continue;
    const value = (timer as unknown as Record<string, unknown>)[key];
    if (typeof value === "string" || typeof value === "number") (extra ??= {})[key] = value;
  }
  return extra ?? 0;
}

/** What an index file says besides its rows. */
export interface RecoveryIndexHeader {
  /** The archive commit its runs were checked against (see Columns.archiveSha); absent: unknown. */
  archiveSha?: string | null;
  /** The object files' mark when the file was written (see Columns.storeMark); absent: none. */
  storeMark?: string | null;
}

/**
 * Builds the file's bytes one run at a time, straight into its columns (no summary object per
 * run: the scheduler writes 100,000 runs at the end of a cold recovery, when memory peaks).
 */
export class RecoveryIndexWriter {
  readonly #runIds: string[] = [];
  readonly #runTreeOids: string[] = [];
  readonly #eventsOids: string[] = [];
  readonly #lastEventOids: string[] = [];
  readonly #runNumbers: number[] = [];
  readonly #terminals: (string | null)[] = [];
  readonly #timerIds: string[] = [];
  readonly #fireAts: string[] = [];
  readonly #setSeqs: number[] = [];
  readonly #stepIds: (0 | string)[] = [];
  readonly #extras: (0 | Record<string, string | number>)[] = [];

  /** @param maxEventBytes the limit the summaries were read with (it must match on load) */
  constructor(private readonly maxEventBytes: number) {}

  /**
   * Adds a run whose pending timers are `timers[first]` … `timers[first + count - 1]`.
   * @param lastEventOid the blob oid of its event file `<maxFileSeq>.json`, null when none or unknown
   */
  add(runId: string, runTreeOid: string, eventsOid: string | null, lastEventOid: string | null, maxFileSeq: number, lastSeq: number, terminal: TerminalEventType | null, timers: readonly PendingTimer[], first = 0, count = timers.length): void {
    this.#runIds.push(runId);
    this.#runTreeOids.push(runTreeOid);
    this.#eventsOids.push(eventsOid ?? NO_OID);
    this.#lastEventOids.push(lastEventOid !== null && lastEventOid.length === OID_LENGTH ? lastEventOid : NO_OID);
    this.#runNumbers.push(maxFileSeq, lastSeq, count);
    this.#terminals.push(terminal);
    for (let i = first; i < first + count; i++) {
      const timer = timers[i] as PendingTimer;
      this.#timerIds.push(timer.timerId);
      this.#fireAts.push(timer.fireAt);
      this.#setSeqs.push(timer.setSeq);
      this.#stepIds.push(typeof timer.stepId === "string" ? timer.stepId : 0);
      this.#extras.push(extraOf(timer));
    }
  }

  /**
   * The file's bytes.
   * @param runsTreeOid the `runs/` folder the added runs are all the runs of (see
   *   Columns.runsTreeOid), or null when unknown
   * @param header what else the file says (the archive commit the runs were checked against)
   */
  bytes(runsTreeOid: string | null = null, header: RecoveryIndexHeader = {}): Uint8Array {
    const body: Columns = {
      format: FORMAT_NAME,
      version: FORMAT_VERSION,
      runState: RUN_STATE_VERSION,
      maxEventBytes: this.maxEventBytes,
      runsTreeOid,
      ...(header.archiveSha === undefined ? {} : { archiveSha: header.archiveSha }),
      ...(header.storeMark === undefined || header.storeMark === null ? {} : { storeMark: header.storeMark }),
      runIds: this.#runIds,
      runTreeOids: this.#runTreeOids.join(""),
      eventsOids: this.#eventsOids.join(""),
      lastEventOids: this.#lastEventOids.join(""),
      runNumbers: this.#runNumbers,
      terminals: this.#terminals,
      timerIds: this.#timerIds,
      fireAts: this.#fireAts,
      setSeqs: this.#setSeqs,
      stepIds: this.#stepIds,
      extras: this.#extras,
    };
    return Buffer.from(JSON.stringify(body), "utf8");
  }
}

/**
 * The file's bytes for these runs.
 * @param maxEventBytes the limit the summaries were read with (a different limit can change
 *   which events are bad, so it must match on load)
 */
export function encodeRecoveryIndex(maxEventBytes: number, runs: Iterable<readonly [string, RunSummary]>, header: RecoveryIndexHeader = {}): Uint8Array {
  const writer = new RecoveryIndexWriter(maxEventBytes);
  for (const [runId, s] of runs) writer.add(runId, s.runTreeOid, s.eventsOid, s.lastEventOid ?? null, s.maxFileSeq, s.lastSeq, s.terminal, s.pendingTimers);
  return writer.bytes(null, header);
}

/** What every fireAt is written as (`toISOString()`): parses, so `Date.parse` need not be asked. */
const STORED_INSTANT = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

function isSeq(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= -1;
}

// Field checks are by type (and fireAt must parse, as the timer queue needs it): the content was
// derived from validated logs and is checksummed, and each run is keyed by exact oid equality.
// The oid columns are checked by length only: a slice that is not a hex oid never equals the
// oid of a tree (nor of an events folder, when the fire path compares those), so its run is
// read from its log, as a changed run is.
function decodeTimer(timerId: unknown, fireAt: unknown, setSeq: unknown, stepId: unknown, extra: unknown): PendingTimer | null {
  if (typeof timerId !== "string" || timerId === "" || typeof fireAt !== "string" || !isSeq(setSeq)) return null;
  if (!STORED_INSTANT.test(fireAt) && Number.isNaN(Date.parse(fireAt))) return null;
  const timer: { -readonly [K in keyof PendingTimer]: PendingTimer[K] } = { timerId, fireAt, setSeq };
  if (stepId !== 0) {
    if (typeof stepId !== "string") return null;
    timer.stepId = stepId;
  }
  if (extra === 0) return timer;
  if (typeof extra !== "object" || extra === null || Array.isArray(extra)) return null;
  for (const key in extra) {
    const v = (extra as Record<string, unknown>)[key];
    if (NUMBER_KEYS.has(key) ? !Number.isSafeInteger(v) : !EXTRA_KEYS.has(key) || typeof v !== "string") return null;
    if (key === "misfire" && v !== "skip" && v !== "latest" && v !== "all") return null;
    (timer as Record<string, unknown>)[key] = v;
  }
  return timer;
}

const isArray = Array.isArray;

/**
 * A decoded index, kept in columns: what a warm start restores runs from without a summary
 * object per run (see seams/scheduler/run-table.ts). Row `i` is one run.
 */
export interface RecoveryIndex {
  readonly runIds: readonly string[];
  /** `runTreeOid` of row i at `i * 40`. */
  readonly runTreeOids: string;
  /** `eventsOid` of row i at `i * 40` (see {@link eventsOidAt}). */
  readonly eventsOids: string;
  /** `lastEventOid` of row i at `i * 40` ({@link NO_OID} for none; see {@link lastEventOidAt}). */
  readonly lastEventOids: string;
  /** maxFileSeq, lastSeq and number of timers of row i at `3 * i`. */
  readonly runNumbers: readonly number[];
  readonly terminals: readonly (TerminalEventType | null)[];
  /** Every pending timer, rows in order; row i's are from `firstTimer[i]`. */
  readonly timers: readonly PendingTimer[];
  readonly firstTimer: Int32Array;
  /** Oid of the `runs/` folder the rows are all the runs of, or null (see Columns.runsTreeOid). */
  readonly runsTreeOid: string | null;
  /** The archive commit the rows were checked against (see Columns.archiveSha); undefined: unknown. */
  readonly archiveSha: string | null | undefined;
  /** The object files' mark when it was written (see Columns.storeMark), or null. */
  readonly storeMark: string | null;
  /** Row of `runId`, or -1. Fast when asked in the order the rows were written. */
  rowOf(runId: string): number;
}

/** Row i's events folder oid (null when it had none). */
export function eventsOidAt(index: RecoveryIndex, row: number): string | null {
  const at = row * OID_LENGTH;
  return index.eventsOids.startsWith(NO_OID, at) ? null : index.eventsOids.slice(at, at + OID_LENGTH);
}

/** Row i's last event blob oid (null when none or unknown). */
export function lastEventOidAt(index: RecoveryIndex, row: number): string | null {
  const at = row * OID_LENGTH;
  return index.lastEventOids.startsWith(NO_OID, at) ? null : index.lastEventOids.slice(at, at + OID_LENGTH);
}

/** Whether row i's last event blob oid is null (none or unknown). */
export function noLastEventOidAt(index: RecoveryIndex, row: number): boolean {
  return index.lastEventOids.startsWith(NO_OID, row * OID_LENGTH);
}

/** Whether row i's events folder oid is null. */
export function noEventsOidAt(index: RecoveryIndex, row: number): boolean {
  return index.eventsOids.startsWith(NO_OID, row * OID_LENGTH);
}

/**
 * Parses the file's bytes into columns (see {@link RecoveryIndex}).
 * @returns null when the file is not a current, consistent index for `maxEventBytes` (then
 *   nothing in it may be used)
 */
export function decodeRecoveryColumns(bytes: Uint8Array, maxEventBytes: number): RecoveryIndex | null {
  let body: unknown;
  try {
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // Almost always ASCII (ids, oids, instants): then latin1 gives the same string without
    // utf8's decoding, a third of the text step at 100,000 runs (a 19 MB file).
    body = JSON.parse(isAscii(text) ? text.toString("latin1") : text.toString("utf8"));
  } catch {
    return null;
  }
  const b = body as Partial<Columns> | null;
  if (b === null || typeof b !== "object" || b.format !== FORMAT_NAME || b.version !== FORMAT_VERSION || b.runState !== RUN_STATE_VERSION) return null;
  if (b.maxEventBytes !== maxEventBytes) return null;
  const { runIds, runTreeOids, eventsOids, lastEventOids, runNumbers, terminals, timerIds, fireAts, setSeqs, stepIds, extras } = b;
  if (!isArray(runIds) || !isArray(runNumbers) || !isArray(terminals) || !isArray(timerIds) || !isArray(fireAts) || !isArray(setSeqs) || !isArray(stepIds) || !isArray(extras)) return null;
  if (typeof runTreeOids !== "string" || typeof eventsOids !== "string" || typeof lastEventOids !== "string") return null;
  const runsTreeOid = b.runsTreeOid ?? null;
  if (runsTreeOid !== null && (typeof runsTreeOid !== "string" || !/^[0-9a-f]{40}$/.test(runsTreeOid))) return null;
  const storeMark = b.storeMark ?? null;
  if (storeMark !== null && (typeof storeMark !== "string" || !/^[0-9a-f]{40}$/.test(storeMark))) return null;
  const archiveSha = b.archiveSha;
  if (archiveSha !== undefined && archiveSha !== null && (typeof archiveSha !== "string" || !/^[0-9a-f]{40}$/.test(archiveSha))) return null;
  const n = runIds.length;
  const count = timerIds.length;
  if (runTreeOids.length !== n * OID_LENGTH || eventsOids.length !== n * OID_LENGTH || lastEventOids.length !== n * OID_LENGTH || runNumbers.length !== 3 * n || terminals.length !== n) return null;
  if (fireAts.length !== count || setSeqs.length !== count || stepIds.length !== count || extras.length !== count) return null;
  const timers: PendingTimer[] = new Array<PendingTimer>(count);
  const firstTimer = new Int32Array(n + 1);
  let t = 0;
  for (let i = 0; i < n; i++) {
    const maxFileSeq = runNumbers[3 * i];
    const lastSeq = runNumbers[3 * i + 1];
    const runTimers = runNumbers[3 * i + 2];
    const terminal = terminals[i];
    if (typeof runIds[i] !== "string" || !isSeq(maxFileSeq) || !isSeq(lastSeq) || !Number.isSafeInteger(runTimers) || (runTimers as number) < 0 || t + (runTimers as number) > count) return null;
    if (terminal !== null && (typeof terminal !== "string" || !isTerminalEventType(terminal))) return null;
    firstTimer[i] = t;
    for (const end = t + (runTimers as number); t < end; t++) {
      const timer = decodeTimer(timerIds[t], fireAts[t], setSeqs[t], stepIds[t], extras[t]);
      if (timer === null) return null;
      // One generation per timer id in a run (a state's map holds no two).
      for (let k = firstTimer[i] as number; k < t; k++) if ((timers[k] as PendingTimer).timerId === timer.timerId) return null;
      timers[t] = timer;
    }
  }
  if (t !== count) return null;
  firstTimer[n] = t;
  const ids = runIds as string[];
  let next = 0;
  let byId: Map<string, number> | null = null;
  return {
    runIds: ids,
    runTreeOids,
    eventsOids,
    lastEventOids,
    runNumbers: runNumbers as number[],
    terminals: terminals as (TerminalEventType | null)[],
    timers,
    firstTimer,
    runsTreeOid,
    archiveSha,
    storeMark,
    rowOf(runId) {
      // A start asks in listing order, which is the order the rows were written in.
      if (ids[next] === runId) return next++;
      if (byId === null) {
        byId = new Map();
        for (let i = 0; i < n; i++) byId.set(ids[i] as string, i);
      }
      const row = byId.get(runId);
      if (row === undefined) return -1;
      next = row + 1;
      return row;
    },
  };
}

/**
 * Parses the file's bytes.
 * @param header filled with what else the file says, when given and the file is usable
 * @returns run id → summary, or null when the file is not a current, consistent index for
 *   `maxEventBytes` (then nothing in it may be used)
 */
export function decodeRecoveryIndex(bytes: Uint8Array, maxEventBytes: number, header?: RecoveryIndexHeader): Map<string, RunSummary> | null {
  const index = decodeRecoveryColumns(bytes, maxEventBytes);
  if (index === null) return null;
  if (header !== undefined && index.archiveSha !== undefined) header.archiveSha = index.archiveSha;
  const out = new Map<string, RunSummary>();
  index.runIds.forEach((runId, i) => {
    out.set(runId, {
      runTreeOid: index.runTreeOids.slice(i * OID_LENGTH, (i + 1) * OID_LENGTH),
      eventsOid: eventsOidAt(index, i),
      lastEventOid: lastEventOidAt(index, i),
      maxFileSeq: index.runNumbers[3 * i] as number,
      lastSeq: index.runNumbers[3 * i + 1] as number,
      terminal: index.terminals[i] as TerminalEventType | null,
      pendingTimers: index.timers.slice(index.firstTimer[i], index.firstTimer[i + 1]),
    });
  });
  return out;
}
