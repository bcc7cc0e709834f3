/**
 * workflow-host: a durable-timer and signal host for workflow engines, with bare git
 * repositories as the database (docs/design.md). Named exports only.
 *
 * The root is what an application needs: the host and its runtime, the seams, the store, the
 * errors, and the event types and parsers. Everything else (schemas, planners, caches, lower
 * level readers and writers) is in `workflow-host/internal`, which may change in any release.
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
export type { HostLock, HostLockHolder, HostLockOptions, HostLockState } from "./host/host-lock.js";
export { stopOnSignals, type SignalStop, type StopOnSignalsOptions } from "./host/stop-on-signals.js";
export { openWorkflowStore, type OpenWorkflowStoreOptions } from "./host/open-workflow-store.js";
export { listPendingTimers, type PendingTimerInfo, type PendingTimersReport } from "./host/list-pending-timers.js";
export { decodeTimersCursor, encodeTimersCursor, type TimersCursor } from "./host/timers-cursor.js";
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
export { createWorkflowHostScheduler } from "../seams/scheduler/scheduler.js";
export type { CancelOutcome, QueuedTimer, SchedulerEvent, SchedulerOptions, SchedulerStats, ServedPendingTimers, WorkflowHostScheduler } from "../seams/scheduler/scheduler-types.js";
export { createWorkflowHostSignalChannel } from "../seams/signals/signal-channel.js";
export type { DeliverResult, ReceivedSignal, SignalChannelOptions, WorkflowHostSignalChannel } from "../seams/signals/signal-channel-types.js";
export { cancelTimerDurably, type CancelTimerDurablyOptions } from "../seams/scheduler/timer-cancel.js";
export { createRunEventFeed } from "../seams/signals/run-event-feed.js";
export type { RunEventAttachment, RunEventFeed, RunEventFeedOptions, RunEventListener } from "../seams/signals/run-event-feed.js";
export { createDispatcher } from "../seams/dispatch/dispatcher.js";
export type {
  BackoffPolicy,
  ConsumerHandle,
  ConsumerOptions,
  Delivery,
  DispatchEventType,
  DispatchFilter,
  DispatchHandler,
  Dispatcher,
  DispatcherOptions,
  DispatchReport,
  HttpTarget,
  LaneStatus,
} from "../seams/dispatch/dispatch-types.js";
export { idempotencyKey } from "../seams/dispatch/dispatch-keys.js";
export { releaseParked, readConsumerState, type ParkedRecord } from "../seams/dispatch/consumer-state.js";
export { consumerLag, type ConsumerLag } from "../seams/dispatch/consumer-report.js";
export { verifySignature, SIGNATURE_HEADER } from "../seams/dispatch/http-target.js";

// Git substrate
export { allowAll, createRepoStore } from "./substrate/index.js";
export { workflowRunKind, type WorkflowRunKindOptions } from "./workflow/workflow-run-kind.js";
export type * from "./substrate/types.js";

// Run-log model: event types, parsers, the reducer
export type * from "./workflow/types.js";
export { parseRepoId, parseRunId, parseSignalId, parseSignalName, parseTimerId } from "./workflow/ids.js";
export { parseInstant } from "./workflow/time.js";
export { nextTick } from "./workflow/cron.js";
export { previewCron, type PreviewSpec, type PreviewTick } from "./workflow/schedule/preview.js";
export { parseEvent, serializeEvent, type EventContext } from "./workflow/events.js";
export { reduceRunState } from "./workflow/run-state.js";
export { readRunLog, type BadEvent, type ReadRunLogOptions, type RunLog } from "./workflow/run-log.js";
export type { UnreadableRun } from "./workflow/unreadable-runs.js";
export { DEFAULT_PAGE_EVENTS, MAX_PAGE_EVENTS, readRunLogPage, type RunLogPage, type RunLogPageOptions } from "./workflow/run-log.js";
export { summarizeRunLog, type RunLogSummary, type SummarizeRunLogOptions } from "./workflow/run-log-summary.js";
export { DEFAULT_MAX_REPORTS } from "./workflow/run-log-summary.js";
export type { TimerFiring, TimerHistory, TimerStatus } from "./workflow/timer-lifecycle.js";

// Time
export { systemClock, type Clock, type Timers } from "./time/clock.js";
