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

/** Name of the derived file (see `RepoStore.writeDerived`). */
export const RECOVERY_INDEX_FILE = "run-index.v1.json";
/** Layout version of the file. */
const FORMAT_VERSION = 1;
/** Version of the RunState semantics the summaries were computed with. */
export const RUN_STATE_VERSION = 2;
const FORMAT_NAME = "workflow-host run index";

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

type EncodedTimer = [string, string, number] | [string, string, number, Record<string, string | number>];
type EncodedRun = [string, string, string | null, number, number, string | null, EncodedTimer[]];

const EXTRA_KEYS = new Set(["stepId", "cron", "timezone", "misfire", "startAt", "endAt", "owner", "pausedAt"]);
/** Schedule fields held as numbers (src/workflow/schedule/). */
const NUMBER_KEYS = new Set(["maxTicks", "slot", "jitterMs"]);

function encodeTimer(timer: PendingTimer): EncodedTimer {
  const extra: Record<string, string | number> = {};
  for (const key of [...EXTRA_KEYS, ...NUMBER_KEYS]) {
    const value = (timer as unknown as Record<string, unknown>)[key];
    if (typeof value === "string" || typeof value === "number") extra[key] = value;
  }
  return Object.keys(extra).length === 0 ? [timer.timerId, timer.fireAt, timer.setSeq] : [timer.timerId, timer.fireAt, timer.setSeq, extra];
}

/**
 * The file's bytes for these runs.
 * @param maxEventBytes the limit the summaries were read with (a different limit can change
 *   which events are bad, so it must match on load)
 */
export function encodeRecoveryIndex(maxEventBytes: number, runs: Iterable<readonly [string, RunSummary]>): Uint8Array {
  const encoded: EncodedRun[] = [];
  for (const [runId, s] of runs) {
    encoded.push([runId, s.runTreeOid, s.eventsOid, s.maxFileSeq, s.lastSeq, s.terminal, s.pendingTimers.map(encodeTimer)]);
  }
  const body = { format: FORMAT_NAME, version: FORMAT_VERSION, runState: RUN_STATE_VERSION, maxEventBytes, runs: encoded };
  return Buffer.from(JSON.stringify(body), "utf8");
}

/** What every fireAt is written as (`toISOString()`): parses, so `Date.parse` need not be asked. */
const STORED_INSTANT = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;

function isSeq(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= -1;
}

// Field checks are by type (and fireAt must parse, as the timer queue needs it): the content was
// derived from validated logs and is checksummed, and each run is keyed by exact oid equality.
function decodeTimer(value: unknown): PendingTimer | null {
  if (!Array.isArray(value) || (value.length !== 3 && value.length !== 4)) return null;
  const [timerId, fireAt, setSeq, extra] = value as unknown[];
  if (typeof timerId !== "string" || timerId === "" || typeof fireAt !== "string" || !isSeq(setSeq)) return null;
  if (!STORED_INSTANT.test(fireAt) && Number.isNaN(Date.parse(fireAt))) return null;
  const timer: { -readonly [K in keyof PendingTimer]: PendingTimer[K] } = { timerId, fireAt, setSeq };
  if (extra !== undefined) {
    if (typeof extra !== "object" || extra === null || Array.isArray(extra)) return null;
    for (const [key, v] of Object.entries(extra)) {
      if (NUMBER_KEYS.has(key) ? !Number.isSafeInteger(v) : !EXTRA_KEYS.has(key) || typeof v !== "string") return null;
      if (key === "misfire" && v !== "skip" && v !== "latest" && v !== "all") return null;
      (timer as Record<string, unknown>)[key] = v;
    }
  }
  return timer;
}

/**
 * Parses the file's bytes.
 * @returns run id → summary, or null when the file is not a current, consistent index for
 *   `maxEventBytes` (then nothing in it may be used)
 */
export function decodeRecoveryIndex(bytes: Uint8Array, maxEventBytes: number): Map<string, RunSummary> | null {
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"));
  } catch {
    return null;
  }
  const b = body as { format?: unknown; version?: unknown; runState?: unknown; maxEventBytes?: unknown; runs?: unknown };
  if (b === null || typeof b !== "object" || b.format !== FORMAT_NAME || b.version !== FORMAT_VERSION || b.runState !== RUN_STATE_VERSION) return null;
  if (b.maxEventBytes !== maxEventBytes || !Array.isArray(b.runs)) return null;
  const out = new Map<string, RunSummary>();
  for (const run of b.runs as unknown[]) {
    if (!Array.isArray(run) || run.length !== 7) return null;
    const [runId, runTreeOid, eventsOid, maxFileSeq, lastSeq, terminal, timers] = run as unknown[];
    if (typeof runId !== "string" || typeof runTreeOid !== "string" || runTreeOid.length !== 40) return null;
    if (eventsOid !== null && (typeof eventsOid !== "string" || eventsOid.length !== 40)) return null;
    if (!isSeq(maxFileSeq) || !isSeq(lastSeq) || !Array.isArray(timers)) return null;
    if (terminal !== null && (typeof terminal !== "string" || !isTerminalEventType(terminal))) return null;
    const pendingTimers: PendingTimer[] = [];
    for (const t of timers as unknown[]) {
      const timer = decodeTimer(t);
      if (timer === null) return null;
      pendingTimers.push(timer);
    }
    out.set(runId, { runTreeOid, eventsOid: eventsOid as string | null, maxFileSeq, lastSeq, terminal: terminal as TerminalEventType | null, pendingTimers });
  }
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
