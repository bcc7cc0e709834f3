/**
 * Every run a deployment view holds, by id: a map of run records, where the runs a recovery
 * restored or read and nothing has touched since are kept as rows of a few columns instead of
 * objects.
 *
 * Why: a deployment of 100,000 runs kept, per run, a record, a state, a one-entry `Map` of its
 * timers, an array of queued timer ids and two oid strings: ~1.2 KB of heap and eight objects a
 * run, most of a warm start's time (allocating them, and the garbage collector copying them
 * out of the young generation) and, through the heap that much retained data lets V8 grow to,
 * most of a cold start's peak memory. A row costs its run id, a few slots in shared arrays and
 * its pending timers (the queue holds those objects anyway).
 *
 * A row stands for exactly the record the view would have made for that run: asking for a
 * run (`get`, iteration) turns its row into that record, once, with the same `PendingTimer`
 * objects the queue holds, and from then on the record is the run (it is changed in place by
 * the tail and the fire committer, as before). Only runs without bad events and with a known
 * tree oid become rows: the others keep records (their reports repeat at every start).
 *
 * A fire commit does not make records of the rows it fires: it plans from a row's state
 * ({@link RunTable.base}) and writes the state after the fire back into the row
 * ({@link RunTable.adoptRow}) when the row can hold it (no timer left, no signal), so the row
 * then stands for exactly the record adopting the fire would have left.
 */
import type { RecoveryIndexWriter } from "../../src/workflow/recovery-index.js";
import type { PendingTimer, RunState, TerminalEventType } from "../../src/workflow/types.js";

/** What the view keeps of one run. */
export interface RunRecord {
  state: RunState;
  /** Highest seq among event file names (valid or not); the next append goes after it. */
  maxFileSeq: number;
  /** Oid of `runs/<runId>/events` the state was read at; null when unknown. */
  eventsOid: string | null;
  /**
   * Blob oid of the event file `<maxFileSeq>.json` there (the log's last), kept in the recovery
   * index so a start can check it is stored before it trusts the run's row (design notes §74);
   * null when none or unknown.
   */
  lastEventOid: string | null;
  /** Oid of `runs/<runId>` the state was read at (the recovery index key); null when unknown. */
  runTreeOid: string | null;
  /** Bad events known in the log; a run with any is never put in the recovery index. */
  bad: number;
  /** timerIds this run has in the queue (a few at most: an array is a fifth of a Set's size). */
  queued: string[];
  /** The folder reuses an archived run's id (reported as a bad event): none of its timers is armed. */
  reused?: boolean;
}

/**
 * A run kept as a row, as a fire plans from it (see {@link RunTable.base}): its state as the
 * row's record would hold it, made without the record. `row` names the row for
 * {@link RunTable.adoptRow} while the table's {@link RunTable.changes} has not moved.
 */
export class RowBase {
  constructor(
    readonly row: number,
    readonly state: RunState,
    readonly maxFileSeq: number,
    readonly eventsOid: string | null,
  ) {}
}

const OID_LENGTH = 40;
/** "-": the recovery index's columns hold dashes for an oid that is none or unknown. */
const DASH = 0x2d;
/**
 * Numbers per row in {@link RunTable}'s `nums`: eventsAt, maxFileSeq, lastSeq, first, count,
 * queued mask, terminal (index in `terminalKinds`), timer list (index in `timerLists`), runTreeAt.
 */
const NUMS = 9;
/** A run with more pending timers than this keeps its queued ids in a list, not a bit mask. */
export const MASK_BITS = 30;

// Shared by every state made from a row (see deployment-view.ts: the scheduler keeps no signals).
const NO_SIGNAL_IDS: ReadonlySet<string> = new Set();
const NO_SIGNALS: RunState["unconsumedSignals"] = Object.freeze([]);

export class RunTable implements ReadonlyMap<string, RunRecord> {
  readonly #records = new Map<string, RunRecord>();
  /** Run id → row, for the runs that are rows (never also in #records). */
  readonly #rowOf = new Map<string, number>();
  // Columns, one entry (or NUMS) per row ever added; a row turned into a record is left unused
  // until no row is left.
  /** Per row: a string holding its tree oid at `runTreeAt`. */
  #runTreeOids: string[] = [];
  /** Per row: a string holding its events folder's oid at `eventsAt` ("" for none). */
  #eventsOids: string[] = [];
  /** Per row: a string holding its last event's blob oid at `eventsAt` ("" or dashes for none or unknown). */
  #lastEventOids: string[] = [];
  /** Rows added so far (including the ones turned into records since). */
  #count = 0;
  /** NUMS numbers per row (a typed array: a warm start adds 100,000 rows at once). */
  #nums = new Float64Array(NUMS * 64);
  /** The terminal types rows have (null first): a handful. */
  #terminalKinds: (TerminalEventType | null)[] = [null];
  /** The lists rows' pending timers are stretches of (`first`, `count`): the index's, #ownTimers. */
  #timerLists: (readonly PendingTimer[])[] = [];
  /** Timers of rows made from records (rows from the recovery index point into its list). */
  #ownTimers: PendingTimer[] = [];
  /** Queued ids of rows with more than MASK_BITS timers, by row. */
  #queuedLists = new Map<number, readonly string[]>();

  /** Bumped whenever a run is added, replaced, removed or turned from a row into a record (see {@link pendingWalk}). */
  #changes = 0;

  get size(): number {
    return this.#records.size + this.#rowOf.size;
  }

  /** A count that moves whenever the set of runs, or how one is held, changes. */
  get changes(): number {
    return this.#changes;
  }

  /** Runs held as rows, not turned into records yet. */
  get rows(): number {
    return this.#rowOf.size;
  }

  has(runId: string): boolean {
    return this.#records.has(runId) || this.#rowOf.has(runId);
  }

  /**
   * Whether the run is known at tree `runTreeOid` with no bad events (a row, or a record that
   * may be summarised), without turning a row into a record.
   */
  cleanAt(runId: string, runTreeOid: string): boolean {
    const row = this.#rowOf.get(runId);
    if (row !== undefined) return this.#runTreeOidOf(row) === runTreeOid;
    const record = this.#records.get(runId);
    return record !== undefined && record.bad === 0 && record.reused !== true && record.runTreeOid === runTreeOid;
  }

  /** The run's record (made from its row on first ask), or undefined for an unknown run. */
  get(runId: string): RunRecord | undefined {
    const record = this.#records.get(runId);
    if (record !== undefined) return record;
    const row = this.#rowOf.get(runId);
    return row === undefined ? undefined : this.#materialize(runId, row);
  }

  /**
   * What a fire plans the run from: its record, or for a run kept as a row a {@link RowBase},
   * without turning the row into a record (a fire of such a run is then adopted into the row
   * itself, see {@link adoptRow}); undefined for an unknown run.
   */
  base(runId: string): RunRecord | RowBase | undefined {
    const record = this.#records.get(runId);
    if (record !== undefined) return record;
    const row = this.#rowOf.get(runId);
    return row === undefined ? undefined : new RowBase(row, this.#stateOf(runId, row), Math.floor(this.#nums[NUMS * row + 1] as number), this.#eventsOidOf(row));
  }

  /** Whether row `row` (a run's, see {@link base}) holds its events folder at `eventsOid`. */
  rowEventsAt(row: number, eventsOid: string): boolean {
    const source = this.#eventsOids[row] as string;
    return source !== "" && source.startsWith(eventsOid, this.#nums[NUMS * row] as number);
  }

  /**
   * Moves the run kept as row `row` to its state after a fire commit, in the row itself: the
   * record it stands for from then on is the one the view's adopt makes of the record it stood
   * for before (same state, oids and seqs, no timer queued). Only a state the row can hold is
   * taken: no pending timer left, no signal, a known tree oid; the caller turns the row into a
   * record and adopts that otherwise. The caller knows the row is still the run's (no
   * {@link changes} since {@link base} gave it).
   * @returns the timer ids the row had queued (the caller disarms them), or null when declined
   */
  adoptRow(row: number, state: RunState, maxFileSeq: number, eventsOid: string | null, lastEventOid: string | null, runTreeOid: string | null): readonly string[] | null {
    if (state.pendingTimers.size > 0 || runTreeOid === null || state.observedSignalIds.size > 0 || state.unconsumedSignals.length > 0) return null;
    const queued = this.#queuedOf(row);
    this.#runTreeOids[row] = runTreeOid;
    this.#eventsOids[row] = eventsOid ?? "";
    this.#lastEventOids[row] = lastEventOid ?? "";
    this.#queuedLists.delete(row);
    // The oids are whole strings now (at 0); no timers, so the timer list stays as it was.
    this.#setNums(row, 0, maxFileSeq, state.lastSeq, 0, 0, 0, state.terminal, this.#nums[NUMS * row + 7] as number, 0);
    return queued;
  }

  set(runId: string, record: RunRecord): this {
    this.#changes += 1;
    if (this.#rowOf.delete(runId)) this.#dropColumnsWhenEmpty();
    this.#records.set(runId, record);
    return this;
  }

  delete(runId: string): boolean {
    this.#changes += 1;
    const row = this.#rowOf.delete(runId);
    if (row) this.#dropColumnsWhenEmpty();
    return this.#records.delete(runId) || row;
  }

  /**
   * Keeps a run as a row (replacing any record or row of it).
   * @param runTreeOid a string holding the run folder's tree oid at `runTreeAt`
   * @param eventsOid a string holding the events folder's oid at `eventsAt` ("" for none)
   * @param lastEventOid a string holding the last event's blob oid at `eventsAt` ("" or dashes
   *   there for none or unknown)
   * @param timers a list the table may keep (never changed): the run's pending timers are
   *   `timers[first]` … `timers[first + count - 1]`, in its state's order, each id once
   * @param queued which of them the record's `queued` lists: bit i for `timers[first + i]`
   *   (runs of more than 30 timers: the ids, in that order)
   */
  addRow(
    runId: string,
    runTreeOid: string,
    runTreeAt: number,
    eventsOid: string,
    eventsAt: number,
    lastEventOid: string,
    maxFileSeq: number,
    lastSeq: number,
    terminal: TerminalEventType | null,
    timers: readonly PendingTimer[],
    first: number,
    count: number,
    queued: number | readonly string[],
  ): void {
    this.#changes += 1;
    this.#records.delete(runId);
    const row = this.#count++;
    this.#rowOf.set(runId, row);
    this.#runTreeOids.push(runTreeOid);
    this.#eventsOids.push(eventsOid);
    this.#lastEventOids.push(lastEventOid);
    if (NUMS * row + NUMS > this.#nums.length) {
      const grown = new Float64Array(this.#nums.length * 2);
      grown.set(this.#nums);
      this.#nums = grown;
    }
    let list = this.#timerLists.indexOf(timers);
    if (list < 0) list = this.#timerLists.push(timers) - 1;
    this.#setNums(row, eventsAt, maxFileSeq, lastSeq, first, count, typeof queued === "number" ? queued : 0, terminal, list, runTreeAt);
    if (typeof queued !== "number") this.#queuedLists.set(row, queued);
  }

  /** Keeps an existing record as a row (see {@link addRow}); the record itself is let go. */
  compact(runId: string, record: RunRecord): void {
    if (record.runTreeOid === null || record.bad > 0 || record.reused === true) return;
    const first = this.#ownTimers.length;
    let mask = 0;
    let i = 0;
    for (const timer of record.state.pendingTimers.values()) {
      this.#ownTimers.push(timer);
      if (record.queued.includes(timer.timerId)) mask |= 1 << i;
      i += 1;
    }
    const queued = i > MASK_BITS ? [...record.queued] : mask;
    this.addRow(runId, record.runTreeOid, 0, record.eventsOid ?? "", 0, record.lastEventOid ?? "", record.maxFileSeq, record.state.lastSeq, record.state.terminal, this.#ownTimers, first, i, queued);
  }

  /** Each run's queued timer ids, records and rows alike, without turning rows into records. */
  *queuedTimers(): IterableIterator<[string, readonly string[]]> {
    for (const [runId, record] of this.#records) yield [runId, record.queued];
    for (const [runId, row] of this.#rowOf) yield [runId, this.#queuedOf(row)];
  }

  /**
   * A walk over each pending timer of every run that has not ended (paused series included, in
   * each run's state order), records and rows alike, without turning rows into records. Each
   * `step(runs, visit)` calls `visit` for the timers of up to `runs` more runs and returns true
   * once every run was walked. Valid while the table does not change ({@link changes}): a
   * caller that lets the event loop turn between steps must start over if it did.
   */
  pendingWalk(): (runs: number, visit: (runId: string, timer: PendingTimer) => void) => boolean {
    const records = this.#records.entries();
    const rows = this.#rowOf.entries();
    let inRows = false;
    return (runs, visit) => {
      for (let n = 0; n < runs; n++) {
        if (!inRows) {
          const next = records.next();
          if (next.done === true) {
            inRows = true;
            n -= 1;
            continue;
          }
          const [runId, record] = next.value;
          if (record.state.terminal !== null) continue;
          for (const timer of record.state.pendingTimers.values()) visit(runId, timer);
          continue;
        }
        const next = rows.next();
        if (next.done === true) return true;
        const [runId, row] = next.value;
        const at = NUMS * row;
        const count = this.#nums[at + 4] as number;
        if (count === 0 || this.#terminalOf(row) !== null) continue;
        const timers = this.#timerList(row);
        const first = this.#nums[at + 3] as number;
        for (let i = first; i < first + count; i++) visit(runId, timers[i] as PendingTimer);
      }
      return false;
    };
  }

  /** Forgets every queued timer id (the view disarmed them all). */
  clearQueued(): void {
    for (const record of this.#records.values()) record.queued = [];
    for (const row of this.#rowOf.values()) this.#nums[NUMS * row + 5] = 0;
    this.#queuedLists.clear();
  }

  /**
   * Adds every run to `writer` as {@link RecoveryIndexWriter.add} takes it (records that may not
   * be summarised, with bad events or no tree oid, left out), without turning rows into records.
   */
  writeSummaries(writer: RecoveryIndexWriter): void {
    for (const [runId, r] of this.#records) {
      if (r.bad > 0 || r.runTreeOid === null) continue;
      writer.add(runId, r.runTreeOid, r.eventsOid, r.lastEventOid, r.maxFileSeq, r.state.lastSeq, r.state.terminal, [...r.state.pendingTimers.values()]);
    }
    for (const [runId, row] of this.#rowOf) {
      const n = NUMS * row;
      writer.add(runId, this.#runTreeOidOf(row), this.#eventsOidOf(row), this.#lastEventOidOf(row), this.#nums[n + 1] as number, this.#nums[n + 2] as number, this.#terminalOf(row), this.#timerList(row), this.#nums[n + 3] as number, this.#nums[n + 4] as number);
    }
  }

  #terminalOf(row: number): TerminalEventType | null {
    return this.#terminalKinds[this.#nums[NUMS * row + 6] as number] as TerminalEventType | null;
  }

  #timerList(row: number): readonly PendingTimer[] {
    return this.#timerLists[this.#nums[NUMS * row + 7] as number] as readonly PendingTimer[];
  }

  #runTreeOidOf(row: number): string {
    const source = this.#runTreeOids[row] as string;
    const at = this.#nums[NUMS * row + 8] as number;
    return at === 0 && source.length === OID_LENGTH ? source : source.slice(at, at + OID_LENGTH);
  }

  #eventsOidOf(row: number): string | null {
    const source = this.#eventsOids[row] as string;
    if (source === "") return null;
    const at = this.#nums[NUMS * row] as number;
    return at === 0 && source.length === OID_LENGTH ? source : source.slice(at, at + OID_LENGTH);
  }

  #lastEventOidOf(row: number): string | null {
    const source = this.#lastEventOids[row] as string;
    const at = this.#nums[NUMS * row] as number;
    if (source.length < at + OID_LENGTH || source.charCodeAt(at) === DASH) return null;
    return at === 0 && source.length === OID_LENGTH ? source : source.slice(at, at + OID_LENGTH);
  }

  #queuedOf(row: number): string[] {
    const list = this.#queuedLists.get(row);
    if (list !== undefined) return [...list];
    const n = NUMS * row;
    const timers = this.#timerList(row);
    const first = this.#nums[n + 3] as number;
    const count = this.#nums[n + 4] as number;
    const mask = this.#nums[n + 5] as number;
    // Made as a literal for the first id: `[]` then push gives a run's one id room for 17.
    let ids: string[] | null = null;
    for (let i = 0; i < count; i++) {
      if ((mask & (1 << i)) === 0) continue;
      const id = (timers[first + i] as PendingTimer).timerId;
      if (ids === null) ids = [id];
      else ids.push(id);
    }
    return ids ?? [];
  }

  /** Row `row`'s numbers, in the order its getters read them; `terminal` kept as its kind's index. */
  #setNums(row: number, eventsAt: number, maxFileSeq: number, lastSeq: number, first: number, count: number, queuedMask: number, terminal: TerminalEventType | null, list: number, runTreeAt: number): void {
    let terminalKind = this.#terminalKinds.indexOf(terminal);
    if (terminalKind < 0) terminalKind = this.#terminalKinds.push(terminal) - 1;
    const n = NUMS * row;
    const nums = this.#nums;
    nums[n] = eventsAt;
    nums[n + 1] = maxFileSeq;
    nums[n + 2] = lastSeq;
    nums[n + 3] = first;
    nums[n + 4] = count;
    nums[n + 5] = queuedMask;
    nums[n + 6] = terminalKind;
    nums[n + 7] = list;
    nums[n + 8] = runTreeAt;
  }

  /** The state of the record row `row` stands for (a new one each call). */
  #stateOf(runId: string, row: number): RunState {
    const n = NUMS * row;
    const timers = this.#timerList(row);
    const first = this.#nums[n + 3] as number;
    const end = first + (this.#nums[n + 4] as number);
    const pendingTimers = new Map<string, PendingTimer>();
    for (let i = first; i < end; i++) pendingTimers.set((timers[i] as PendingTimer).timerId, timers[i] as PendingTimer);
    // Through Math.floor (the numbers are integers): a Float64Array element read by code not
    // yet optimised is a boxed double even when integral, and a record or state holding one
    // changed its fields' representation, so every record recovery made (small integers) no
    // longer matched the code that syncs them ("wrong map", design notes §58).
    return { runId, lastSeq: Math.floor(this.#nums[n + 2] as number), terminal: this.#terminalOf(row), pendingTimers, observedSignalIds: NO_SIGNAL_IDS, unconsumedSignals: NO_SIGNALS };
  }

  #materialize(runId: string, row: number): RunRecord {
    const n = NUMS * row;
    const record: RunRecord = {
      state: this.#stateOf(runId, row),
      maxFileSeq: Math.floor(this.#nums[n + 1] as number),
      eventsOid: this.#eventsOidOf(row),
      lastEventOid: this.#lastEventOidOf(row),
      runTreeOid: this.#runTreeOidOf(row),
      bad: 0,
      queued: this.#queuedOf(row),
    };
    this.set(runId, record);
    return record;
  }

  /** Releases the columns once no row is left (every run became a record or went away). */
  #dropColumnsWhenEmpty(): void {
    if (this.#rowOf.size > 0 || this.#count === 0) return;
    this.#count = 0;
    this.#runTreeOids = [];
    this.#eventsOids = [];
    this.#lastEventOids = [];
    this.#nums = new Float64Array(NUMS * 64);
    this.#terminalKinds = [null];
    this.#timerLists = [];
    this.#ownTimers = [];
    this.#queuedLists = new Map();
  }

  // ReadonlyMap: iterating turns every row into its record (the view's own walks use both()).
  forEach(callback: (value: RunRecord, key: string, map: ReadonlyMap<string, RunRecord>) => void, thisArg?: unknown): void {
    for (const [runId, record] of this.entries()) callback.call(thisArg, record, runId, this);
  }

  *entries(): MapIterator<[string, RunRecord]> {
    for (const runId of [...this.#rowOf.keys()]) this.get(runId);
    yield* this.#records.entries();
  }

  *keys(): MapIterator<string> {
    yield* this.#records.keys();
    yield* this.#rowOf.keys();
  }

  *values(): MapIterator<RunRecord> {
    for (const [, record] of this.entries()) yield record;
  }

  [Symbol.iterator](): MapIterator<[string, RunRecord]> {
    return this.entries();
  }
}

/**
 * The timers `timers[first]` … `timers[first + count - 1]` that are not paused series, by id,
 * as a map built only when first read (the queue reads it only for a run it holds suppressions of).
 */
export class UnpausedTimers implements ReadonlyMap<string, PendingTimer> {
  #made: Map<string, PendingTimer> | null = null;
  constructor(
    private readonly timers: readonly PendingTimer[],
    private readonly first: number,
    private readonly count: number,
  ) {}

  #map(): Map<string, PendingTimer> {
    if (this.#made !== null) return this.#made;
    const out = new Map<string, PendingTimer>();
    for (let i = this.first; i < this.first + this.count; i++) {
      const timer = this.timers[i] as PendingTimer;
      if (timer.pausedAt === undefined) out.set(timer.timerId, timer);
    }
    return (this.#made = out);
  }

  get size(): number {
    return this.#map().size;
  }
  get(key: string): PendingTimer | undefined {
    return this.#map().get(key);
  }
  has(key: string): boolean {
    return this.#map().has(key);
  }
  forEach(callback: (value: PendingTimer, key: string, map: ReadonlyMap<string, PendingTimer>) => void, thisArg?: unknown): void {
    this.#map().forEach((value, key) => callback.call(thisArg, value, key, this));
  }
  entries(): MapIterator<[string, PendingTimer]> {
    return this.#map().entries();
  }
  keys(): MapIterator<string> {
    return this.#map().keys();
  }
  values(): MapIterator<PendingTimer> {
    return this.#map().values();
  }
  [Symbol.iterator](): MapIterator<[string, PendingTimer]> {
    return this.#map()[Symbol.iterator]();
  }
}
