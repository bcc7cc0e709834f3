/**
 * workflow-host: a durable-timer and signal host for workflow engines, with bare git
 * repositories as the database (docs/design.md). Named exports only.
 */
export { WorkflowHostError, isWorkflowHostError, type ErrorCode } from "./errors.js";
export { silentLogger, type Logger } from "./logger.js";

// Host process
export {
  createWorkflowHost,
  type WorkflowHost,
  type WorkflowHostOptions,
  type WorkflowHostState,
} from "./host/host.js";
export {
  acquireHostLock,
  inspectHostLock,
  DEFAULT_LOCK_STALE_MS,
  type HostLock,
  type HostLockHolder,
  type HostLockOptions,
  type HostLockState,
} from "./host/host-lock.js";
export { stopOnSignals, type SignalStop, type StopOnSignalsOptions } from "./host/stop-on-signals.js";
export { openWorkflowStore, type OpenWorkflowStoreOptions } from "./host/open-workflow-store.js";
export { listPendingTimers, type PendingTimerInfo, type PendingTimersReport } from "./host/list-pending-timers.js";
export { checkDeployments, type CheckReport, type DeploymentProblem } from "./host/check-deployments.js";
export { compactRun, type CompactRunOptions, type CompactRunResult } from "./host/compact-run.js";
export { endRun, type EndRunOptions, type EndRunResult, type RunOutcome } from "./host/end-run.js";
export {
  archiveEndedRuns,
  DEFAULT_ENDED_RUNS_AFTER_MS,
  type ArchiveEndedRunsOptions,
  type ArchiveEndedRunsResult,
} from "./host/archive-ended-runs.js";
export type { RetentionPolicy } from "./host/retention.js";
export { createRuntimeAdapter } from "./host/runtime-adapter.js";
export type * from "./host/runtime-types.js";

// Seams
export * from "../seams/index.js";

// Git substrate
export { allowAll, createRepoStore } from "./substrate/index.js";
export type * from "./substrate/types.js";

// Run-log model
export * from "./workflow/index.js";

// Time
export { systemClock, createSystemTimers, type Clock, type Timers } from "./time/clock.js";
