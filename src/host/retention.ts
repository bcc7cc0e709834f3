/**
 * The host's retention loop: every `checkEveryMs` it looks at each deployment and, at a quiet
 * moment (its live ref did not move for `quietMs`), runs a retention pass
 * ({@link archiveEndedRuns}): runs that ended more than `endedRunsAfterMs` ago move to the
 * archive ref in one batched commit per pass. A deployment that never goes quiet is passed
 * anyway after `maxDeferrals` checks, so retention is late, never starved.
 *
 * States: idle → waiting (a check is armed) → passing (a pass in flight) → waiting …; `stop()`
 * clears the armed check and waits for the pass in flight. A failed pass is logged and retried
 * at the next check; it loses nothing (see archive-ended-runs.ts). A pass that left due runs
 * (more than one batch) arms the next check after `quietMs` instead of `checkEveryMs`.
 */
import type { Logger } from "../logger.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import type { Principal, RepoStore } from "../substrate/types.js";
import type { Clock, Timers, TimerHandle } from "../time/clock.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { WorkflowHostError } from "../errors.js";
import {
  archiveEndedRuns,
  DEFAULT_ENDED_RUNS_AFTER_MS,
  DEFAULT_MAX_RUNS_PER_COMMIT,
  type ArchiveEndedRunsResult,
  type RetentionCache,
} from "./archive-ended-runs.js";

/** A deployment's retention policy. */
export interface RetentionPolicy {
  /**
   * A run that ended (its terminal event's `at`) longer ago than this leaves the live tree for
   * the archive ref (ms, ≥ 0; default 7 days, {@link DEFAULT_ENDED_RUNS_AFTER_MS}).
   */
  readonly endedRunsAfterMs?: number;
  /** How often deployments are looked at (ms, default min(endedRunsAfterMs / 4, 10 min), at least 1 000). */
  readonly checkEveryMs?: number;
  /** A deployment whose live ref did not move for this long is quiet (ms, default 1 000). */
  readonly quietMs?: number;
  /** Checks a busy deployment may be passed over before a pass runs anyway (default 3). */
  readonly maxDeferrals?: number;
  /** Most runs one retention commit removes (default 1 000; the rest go in the next passes, `quietMs` apart). */
  readonly maxRunsPerCommit?: number;
}

export interface RetentionLoopOptions {
  readonly store: RepoStore;
  readonly principal: Principal;
  readonly listDeployments: () => Promise<readonly string[]>;
  /** Live ref. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Wall clock: when runs ended is compared with it. */
  readonly clock: Clock;
  readonly timers: Timers;
  readonly logger: Logger;
  readonly policy: RetentionPolicy;
  readonly maxEventBytes?: number;
  /** Told about every pass that archived or skipped something. */
  readonly onPass?: (repoId: string, result: ArchiveEndedRunsResult) => void;
}

export interface RetentionLoop {
  /** The policy in force, with defaults filled in. */
  readonly endedRunsAfterMs: number;
  /** Arms the first check. Idempotent. */
  start(): void;
  /**
   * Runs a pass over one deployment now (no quiet wait), serialised with the loop's passes.
   * @throws the pass's errors (repo_id_invalid, the store's)
   */
  runPass(repoId: string): Promise<ArchiveEndedRunsResult>;
  /** Clears the armed check and waits for the pass in flight. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Validates a policy and fills in its defaults.
 * @throws config_invalid for a negative or non-finite duration or count
 */
export function resolveRetentionPolicy(policy: RetentionPolicy): Required<RetentionPolicy> {
  const endedRunsAfterMs = policy.endedRunsAfterMs ?? DEFAULT_ENDED_RUNS_AFTER_MS;
  const resolved = {
    endedRunsAfterMs,
    checkEveryMs: policy.checkEveryMs ?? Math.max(1_000, Math.min(Math.floor(endedRunsAfterMs / 4), 10 * 60 * 1000)),
    quietMs: policy.quietMs ?? 1_000,
    maxDeferrals: policy.maxDeferrals ?? 3,
    maxRunsPerCommit: policy.maxRunsPerCommit ?? DEFAULT_MAX_RUNS_PER_COMMIT,
  };
  for (const [name, value] of Object.entries(resolved)) {
    const positive = name === "checkEveryMs" || name === "maxRunsPerCommit";
    if (!Number.isSafeInteger(value) || value < (positive ? 1 : 0)) {
      throw new WorkflowHostError("config_invalid", `retention.${name} must be an integer ≥ ${positive ? 1 : 0}, got ${String(value)}`, { [name]: value });
    }
  }
  return resolved;
}

/**
 * Creates the retention loop of a host.
 * @throws config_invalid (see {@link resolveRetentionPolicy})
 */
export function createRetentionLoop(opts: RetentionLoopOptions): RetentionLoop {
  const policy = resolveRetentionPolicy(opts.policy);
  const caches = new Map<string, RetentionCache>();
  const deferrals = new Map<string, number>();
  /** Per deployment, the skips the last pass warned about (run id and reason). */
  const warned = new Map<string, Set<string>>();
  let timer: TimerHandle | null = null;
  let stopped = false;
  let started = false;
  let chain: Promise<unknown> = Promise.resolve();

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      opts.timers.setTimeout(resolve, ms);
    });

  function serial<T>(work: () => Promise<T>): Promise<T> {
    const next = chain.then(work, work);
    chain = next.catch(() => undefined);
    return next;
  }

  function pass(repoId: string): Promise<ArchiveEndedRunsResult> {
    return serial(async () => {
      let cache = caches.get(repoId);
      if (cache === undefined) {
        cache = new Map();
        caches.set(repoId, cache);
      }
      const result = await archiveEndedRuns({
        store: opts.store,
        principal: opts.principal,
        repoId,
        ...(opts.ref === undefined ? {} : { ref: opts.ref }),
        clock: opts.clock,
        endedRunsAfterMs: policy.endedRunsAfterMs,
        maxRuns: policy.maxRunsPerCommit,
        cache,
        ...(opts.maxEventBytes === undefined ? {} : { maxEventBytes: opts.maxEventBytes }),
      });
      if (result.archived.length > 0) opts.logger.info(`retention: ${result.archived.length} ended runs of ${repoId} moved to refs/archive/runs`, { repoId, archived: result.archived.length, remaining: result.remaining });
      // A skip is warned about once, not at every check while it lasts (a reused archived id
      // stays skipped for good).
      const before = warned.get(repoId);
      const now = new Set<string>();
      for (const skip of result.skipped) {
        const key = `${skip.runId}\n${skip.reason}`;
        now.add(key);
        if (before?.has(key) !== true) opts.logger.warn(`retention: run ${skip.runId} of ${repoId} stays live: ${skip.reason}`, { repoId, runId: skip.runId });
      }
      warned.set(repoId, now);
      if (result.archived.length > 0 || result.skipped.length > 0) opts.onPass?.(repoId, result);
      return result;
    });
  }

  async function quiet(repoId: string): Promise<boolean> {
    const repo = { kind: WORKFLOW_RUN_KIND, id: repoId };
    const ref = opts.ref ?? DEFAULT_REF;
    const before = await opts.store.resolveRef(opts.principal, repo, ref);
    await sleep(policy.quietMs);
    if (stopped) return false;
    return (await opts.store.resolveRef(opts.principal, repo, ref)) === before;
  }

  async function check(): Promise<void> {
    timer = null;
    let again = false;
    try {
      for (const repoId of await opts.listDeployments()) {
        if (stopped) return;
        const deferred = deferrals.get(repoId) ?? 0;
        if (deferred < policy.maxDeferrals && !(await quiet(repoId))) {
          deferrals.set(repoId, deferred + 1);
          continue;
        }
        if (stopped) return;
        deferrals.set(repoId, 0);
        try {
          const result = await pass(repoId);
          if (result.remaining > 0) again = true;
        } catch (error) {
          opts.logger.error(`retention pass of ${repoId} failed (retried at the next check): ${String(error)}`, { repoId });
        }
      }
    } catch (error) {
      opts.logger.error(`retention: listing deployments failed: ${String(error)}`);
    }
    arm(again ? policy.quietMs : policy.checkEveryMs);
  }

  let running: Promise<void> | null = null;
  function arm(delayMs: number): void {
    if (stopped) return;
    // The callback returns nothing: a FakeClock would await the check, whose quiet wait needs a
    // later advance of the same clock.
    timer = opts.timers.setTimeout(() => {
      running = check();
    }, delayMs);
  }

  return {
    endedRunsAfterMs: policy.endedRunsAfterMs,
    start() {
      if (started || stopped) return;
      started = true;
      arm(policy.checkEveryMs);
    },
    runPass: pass,
    async stop() {
      stopped = true;
      if (timer !== null) opts.timers.clearTimeout(timer);
      timer = null;
      await chain;
      void running;
    },
  };
}
