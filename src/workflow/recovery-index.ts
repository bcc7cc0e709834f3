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
import { isTerminalEventType } from "./event-shapes.js";
import type { PendingTimer, RunState, TerminalEventType } from "./types.js";

/**
 * Name of the derived file (see `RepoStore.writeDerived`). Kept across layout versions (the
 * version is inside), so a new layout replaces the old file instead of leaving it beside.
 */
export const RECOVERY_INDEX_FILE = "run-index.v1.json";
/** Layout version of the file. */
const FORMAT_VERSION = 2;
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
  readonly runIds: string[];
  /** `runTreeOid` of every run, end to end. */
  readonly runTreeOids: string;
  /** `eventsOid` of every run, end to end ({@link NO_OID} for null). */
  readonly eventsOids: string;
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
  /**
   * The archive ref's commit (null: no archive ref) that every run in the file was checked
   * against: none reuses the id of a run that archive holds with another folder. Absent: not
   * known (a file written before this field), so each run is checked at the next start.
   */
  readonly archiveSha?: string | null;
}

/** What the file says besides its runs (see {@link decodeRecoveryIndex}). */
export interface RecoveryIndexHeader {
  /** See `Columns.archiveSha`; undefined when the file does not say. */
  archiveSha?: string | null;
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

/**
 * The file's bytes for these runs.
 * @param maxEventBytes the limit the summaries were read with (a different limit can change
 *   which events are bad, so it must match on load)
 * @param header what else the file says (the archive commit the runs were checked against)
 */
export function encodeRecoveryIndex(maxEventBytes: number, runs: Iterable<readonly [string, RunSummary]>, header: RecoveryIndexHeader = {}): Uint8Array {
  const runIds: string[] = [];
  const runTreeOids: string[] = [];
  const eventsOids: string[] = [];
  const runNumbers: number[] = [];
  const terminals: (string | null)[] = [];
  const timerIds: string[] = [];
  const fireAts: string[] = [];
  const setSeqs: number[] = [];
  const stepIds: (0 | string)[] = [];
  const extras: (0 | Record<string, string | number>)[] = [];
  for (const [runId, s] of runs) {
    runIds.push(runId);
    runTreeOids.push(s.runTreeOid);
    eventsOids.push(s.eventsOid ?? NO_OID);
    runNumbers.push(s.maxFileSeq, s.lastSeq, s.pendingTimers.length);
    terminals.push(s.terminal);
    for (const timer of s.pendingTimers) {
      timerIds.push(timer.timerId);
      fireAts.push(timer.fireAt);
      setSeqs.push(timer.setSeq);
      stepIds.push(typeof timer.stepId === "string" ? timer.stepId : 0);
      extras.push(extraOf(timer));
    }
  }
  const body: Columns = {
    format: FORMAT_NAME,
    version: FORMAT_VERSION,
    runState: RUN_STATE_VERSION,
    maxEventBytes,
    runIds,
    runTreeOids: runTreeOids.join(""),
    eventsOids: eventsOids.join(""),
    runNumbers,
    terminals,
    timerIds,
    fireAts,
    setSeqs,
    stepIds,
    extras,
    ...(header.archiveSha === undefined ? {} : { archiveSha: header.archiveSha }),
  };
  return Buffer.from(JSON.stringify(body), "utf8");
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
 * Parses the file's bytes.
 * @param header filled with what else the file says, when given and the file is usable
 * @returns run id → summary, or null when the file is not a current, consistent index for
 *   `maxEventBytes` (then nothing in it may be used)
 */
export function decodeRecoveryIndex(bytes: Uint8Array, maxEventBytes: number, header?: RecoveryIndexHeader): Map<string, RunSummary> | null {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  } catch {
    return null;
  }
  const b = body as Partial<Columns> | null;
  if (b === null || typeof b !== "object" || b.format !== FORMAT_NAME || b.version !== FORMAT_VERSION || b.runState !== RUN_STATE_VERSION) return null;
  if (b.maxEventBytes !== maxEventBytes) return null;
  const { runIds, runTreeOids, eventsOids, runNumbers, terminals, timerIds, fireAts, setSeqs, stepIds, extras } = b;
  if (!isArray(runIds) || !isArray(runNumbers) || !isArray(terminals) || !isArray(timerIds) || !isArray(fireAts) || !isArray(setSeqs) || !isArray(stepIds) || !isArray(extras)) return null;
  if (typeof runTreeOids !== "string" || typeof eventsOids !== "string") return null;
  const n = runIds.length;
  const timers = timerIds.length;
  if (runTreeOids.length !== n * OID_LENGTH || eventsOids.length !== n * OID_LENGTH || runNumbers.length !== 3 * n || terminals.length !== n) return null;
  if (fireAts.length !== timers || setSeqs.length !== timers || stepIds.length !== timers || extras.length !== timers) return null;
  const out = new Map<string, RunSummary>();
  let t = 0;
  for (let i = 0; i < n; i++) {
    const runId = runIds[i];
    const maxFileSeq = runNumbers[3 * i];
    const lastSeq = runNumbers[3 * i + 1];
    const count = runNumbers[3 * i + 2];
    const terminal = terminals[i];
    if (typeof runId !== "string" || !isSeq(maxFileSeq) || !isSeq(lastSeq) || !Number.isSafeInteger(count) || (count as number) < 0 || t + (count as number) > timers) return null;
    if (terminal !== null && (typeof terminal !== "string" || !isTerminalEventType(terminal))) return null;
    const pendingTimers: PendingTimer[] = [];
    for (const end = t + (count as number); t < end; t++) {
      const timer = decodeTimer(timerIds[t], fireAts[t], setSeqs[t], stepIds[t], extras[t]);
      if (timer === null) return null;
      pendingTimers.push(timer);
    }
    const eventsOid = eventsOids.slice(i * OID_LENGTH, (i + 1) * OID_LENGTH);
    out.set(runId, {
      runTreeOid: runTreeOids.slice(i * OID_LENGTH, (i + 1) * OID_LENGTH),
      eventsOid: eventsOid === NO_OID ? null : eventsOid,
      maxFileSeq,
      lastSeq,
      terminal: terminal as TerminalEventType | null,
      pendingTimers,
    });
  }
  if (t !== timers) return null;
  const archiveSha = b.archiveSha;
  if (header !== undefined && (archiveSha === null || (typeof archiveSha === "string" && /^[0-9a-f]{40}$/.test(archiveSha)))) header.archiveSha = archiveSha;
  return out;
}

/**
 * The run state the scheduler works with, rebuilt from a summary. The scheduler reads only
 * `lastSeq`, `terminal` and `pendingTimers` of its runs; the signal sets (the signal channel's
 * concern, read from the log by each channel) start empty.
 */
export function stateFromSummary(runId: string, summary: RunSummary): RunState {
  const pendingTimers = new Map<string, PendingTimer>();
  for (const timer of summary.pendingTimers) pendingTimers.set(timer.timerId, timer);
  return { runId, lastSeq: summary.lastSeq, terminal: summary.terminal, pendingTimers, observedSignalIds: NO_SIGNAL_IDS, unconsumedSignals: NO_SIGNALS };
}

// Shared by every restored run (a million of them, at a few hundred bytes per empty set): the
// reducer copies a collection before changing it.
const NO_SIGNAL_IDS: ReadonlySet<string> = new Set();
const NO_SIGNALS: RunState["unconsumedSignals"] = Object.freeze([]);
