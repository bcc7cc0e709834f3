/**
 * Deployment repos for the benchmarks, generated fast and cached for one bench run.
 *
 * Events are built in memory and written through the repo store in a few large commits (one
 * per `CHUNK_FILES` files), with a kind handler that skips `validatePush`: the events come from
 * our own serialiser, and validating 100 000 of them would only measure the generator. Each
 * generated repo is kept pristine under the bench's temp folder; a benchmark that writes gets
 * its own copy from {@link RepoCache.checkout}. Nothing generated is ever committed to the
 * project.
 */
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allowAll, createRepoStore } from "../src/substrate/index.js";
import { serializeEvent } from "../src/workflow/events.js";
import type { RunEvent } from "../src/workflow/types.js";
import { WORKFLOW_RUN_DIRECTORY_PREFIX, WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";

/**
 * Files per generated commit unless the spec says otherwise ({@link RepoSpec.commitFiles}): one
 * pack per 200,000 event files, so a 100,000-run × 10 deployment is five packs.
 */
const CHUNK_FILES = 200_000;

/** Instants the generated logs use; all well before any pending timer's fireAt. */
const HISTORY_MS = Date.parse("2026-01-01T00:00:00.000Z");

/** What to generate. */
export interface RepoSpec {
  /** Number of runs, named `run-000000` … */
  readonly runs: number;
  /** Events per run, pending TimerSets included (at least 1 + pending timers). */
  readonly eventsPerRun: number;
  /**
   * fireAt (epoch ms) of each pending timer of run `run` (0-based); [] for none. The timers are
   * `t-0`, `t-1`, … in that order and are the run's last events.
   */
  readonly pending: (run: number) => readonly number[];
  /** A name for the cache key and the logs; must be unique per distinct `pending`. */
  readonly label: string;
  /**
   * Event files per generated commit (each commit is one pack); default 200,000. A bench that
   * times commits on the deployment sets it to hold everything in one pack, as a deployment's
   * packs are once merged: two packs of equal size are merged (one rewritten whole) as soon as
   * sixteen commit packs sit beside them, which a long-lived deployment does once per doubling.
   */
  readonly commitFiles?: number;
}

/** A generated data dir: `<dataDir>/deployments/<repoId>.git`. */
export interface GeneratedRepo {
  readonly dataDir: string;
  readonly repoId: string;
  readonly gitdir: string;
  readonly runs: number;
  readonly events: number;
  readonly pendingTimers: number;
  /** Run ids in order. */
  readonly runIds: readonly string[];
}

/** The run id of run number `i`. */
export function runIdOf(i: number): string {
  return `run-${String(i).padStart(6, "0")}`;
}

/**
 * One run's events: a start event, history (fired timers, signals, steps) and its pending
 * TimerSets last, seq 1 … eventsPerRun.
 */
export function runEvents(run: number, eventsPerRun: number, pendingFireAtMs: readonly number[]): RunEvent[] {
  const events: RunEvent[] = [];
  const at = (seq: number): string => new Date(HISTORY_MS + run * 1_000 + seq * 10).toISOString();
  let seq = 1;
  const push = (body: Record<string, unknown>): void => {
    events.push({ seq, at: at(seq), ...body } as unknown as RunEvent);
    seq += 1;
  };
  push({ type: "WorkflowStarted", data: { workflow: "order-fulfilment", input: { orderId: `o-${run}`, items: run % 7 } } });
  const history = Math.max(0, eventsPerRun - 1 - pendingFireAtMs.length);
  let k = 0;
  while (k < history) {
    const left = history - k;
    const phase = k % 4;
    if (phase === 0 && left >= 2) {
      const timerId = `h-${k}`;
      const fireAt = at(seq + 1);
      push({ type: "TimerSet", data: { timerId, fireAt, stepId: `step-${k}` } });
      push({ type: "TimerFired", data: { timerId, scheduledFor: fireAt, firedAt: fireAt } });
      k += 2;
    } else if (phase === 2) {
      events.push({ seq, type: "SignalReceived", signalName: "approve", signalId: `sig-${run}-${k}`, payload: { by: "bench", k }, at: at(seq) } as unknown as RunEvent);
      seq += 1;
      k += 1;
    } else {
      push({ type: "StepCompleted", data: { stepId: `step-${k}`, output: { ok: true, n: k } } });
      k += 1;
    }
  }
  pendingFireAtMs.forEach((fireAtMs, i) => {
    push({ type: "TimerSet", data: { timerId: `t-${i}`, fireAt: new Date(fireAtMs).toISOString(), stepId: `wait-${i}` } });
  });
  return events;
}

/**
 * Writes a deployment into a fresh data dir.
 * @param loose store every object as a loose object, as the original code's repositories were
 *   (the naive baselines run on those); otherwise as the store writes today (one pack)
 */
export async function generateRepo(dataDir: string, repoId: string, spec: RepoSpec, loose = false): Promise<GeneratedRepo> {
  const store = createRepoStore({
    ...(loose ? { packThreshold: Number.POSITIVE_INFINITY } : {}),
    dataDir,
    // No validatePush: the generator's events are valid by construction (see module comment).
    kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: WORKFLOW_RUN_DIRECTORY_PREFIX }],
    authorize: allowAll,
    watch: false,
    clock: () => new Date(HISTORY_MS),
  });
  const rid = { kind: WORKFLOW_RUN_KIND, id: repoId };
  await store.initRepo(null, rid);
  let files = new Map<string, Uint8Array>();
  let events = 0;
  let pendingTimers = 0;
  const runIds: string[] = [];
  const flush = async (): Promise<void> => {
    if (files.size === 0) return;
    await store.writeTree(null, rid, "refs/heads/main", { files, message: `Generate ${files.size} events` });
    files = new Map();
  };
  for (let run = 0; run < spec.runs; run++) {
    const runId = runIdOf(run);
    runIds.push(runId);
    const pending = spec.pending(run);
    pendingTimers += pending.length;
    for (const event of runEvents(run, spec.eventsPerRun, pending)) {
      files.set(`runs/${runId}/events/${event.seq}.json`, serializeEvent(event));
      events += 1;
    }
    if (files.size >= (spec.commitFiles ?? CHUNK_FILES)) await flush();
  }
  await flush();
  await store.close();
  return {
    dataDir,
    repoId,
    gitdir: join(dataDir, WORKFLOW_RUN_DIRECTORY_PREFIX, `${repoId}.git`),
    runs: spec.runs,
    events,
    pendingTimers,
    runIds,
  };
}

/**
 * Generated repos of one bench run, under one temp folder removed by {@link RepoCache.dispose}.
 */
export class RepoCache {
  readonly #root: Promise<string>;
  readonly #pristine = new Map<string, Promise<GeneratedRepo>>();
  #copies = 0;

  constructor() {
    this.#root = mkdtemp(join(tmpdir(), "workflow-host-bench-"));
  }

  /** The temp folder everything lives under. */
  root(): Promise<string> {
    return this.#root;
  }

  /** A fresh, empty folder under the bench's temp folder. */
  async scratch(name: string): Promise<string> {
    const dir = join(await this.#root, `${name}-${this.#copies++}`);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /**
   * The pristine generated repo for `spec` (generated on first use). Do not write to it.
   * @param loose loose objects, for the naive baselines (see {@link generateRepo})
   */
  pristine(spec: RepoSpec, repoId = "bench", loose = false): Promise<GeneratedRepo> {
    const key = `${spec.label}:${spec.runs}x${spec.eventsPerRun}:${repoId}:${loose ? "loose" : "packed"}`;
    let made = this.#pristine.get(key);
    if (made === undefined) {
      made = (async () => {
        const dir = join(await this.#root, `pristine-${this.#pristine.size}`);
        return generateRepo(dir, repoId, spec, loose);
      })();
      this.#pristine.set(key, made);
    }
    return made;
  }

  /** A private copy of the generated repo for `spec`, free to write to. */
  async checkout(spec: RepoSpec, repoId = "bench", loose = false): Promise<GeneratedRepo> {
    const source = await this.pristine(spec, repoId, loose);
    const dataDir = await this.scratch(`copy-${spec.label}`);
    await cp(source.dataDir, dataDir, { recursive: true });
    await flushFileSystem(dataDir);
    return { ...source, dataDir, gitdir: join(dataDir, WORKFLOW_RUN_DIRECTORY_PREFIX, `${repoId}.git`) };
  }

  /** Removes a checked-out copy early (big repos add up). */
  async release(repo: GeneratedRepo): Promise<void> {
    await rm(repo.dataDir, { recursive: true, force: true });
  }

  /** Removes everything generated. */
  async dispose(): Promise<void> {
    await rm(await this.#root, { recursive: true, force: true });
  }
}

/**
 * Flushes the file system holding `dir` (`sync -f`, Linux's syncfs; plain `sync` where `-f` is
 * unknown; nothing where neither runs). A checkout is a fresh copy of up to ~100 MB, and its
 * pristine source was often generated moments before: left in the page cache, their writeback
 * would run during the measured phase, and every fsync there would queue behind the bench's own
 * set-up, which no host that wrote its deployment earlier meets (one try with 200 MB left dirty:
 * the 100,000-run fire commit with fsync 27 ms against 22 ms).
 */
async function flushFileSystem(dir: string): Promise<void> {
  const run = (args: string[]): Promise<boolean> => new Promise((resolve) => execFile("sync", args, (error) => resolve(error === null)));
  if (!(await run(["-f", dir]))) await run([]);
}
