/** The run-log model (docs/design.md §2, §3): ids, instants, events, paths, cron, the RunState reducer. */
export {
  NAME_ID_PATTERN,
  REPO_OR_RUN_ID_PATTERN,
  parseRepoId,
  parseRunId,
  parseSignalId,
  parseSignalName,
  parseStepId,
  parseTimerId,
} from "./ids.js";
export { instantMs, isoFromMs, parseInstant } from "./time.js";
export { DEFAULT_TIME_ZONE, parseTimeZone } from "./time-zone.js";
export { nextTick, ticksBetween, validateCron, type TickSpan } from "./cron.js";
export {
  TERMINAL_EVENT_TYPES,
  eventBaseSchema,
  isKnownEventType,
  isTerminalEventType,
  knownEventSchemas,
  signalConsumedSchema,
  signalReceivedSchema,
  terminalEventSchema,
  timerCancelledSchema,
  timerFiredSchema,
  timerSetSchema,
  timerSkippedSchema,
  type KnownEventType,
} from "./event-schemas.js";
export { DEFAULT_MAX_EVENT_BYTES, parseEvent, serializeEvent, validateEvent, type EventContext } from "./events.js";
export {
  newSignalConsumed,
  newSignalReceived,
  newTerminalEvent,
  newTimerCancelled,
  newTimerFired,
  newTimerSet,
  newTimerSkipped,
  type NewRunEvent,
  signalConsumedEvent,
  signalReceivedEvent,
  timerCancelledEvent,
  timerFiredEvent,
  timerSetEvent,
  timerSkippedEvent,
} from "./event-constructors.js";
export { assertJsonValue } from "./json-value.js";
export {
  compactedLogPath,
  eventPath,
  parseCompactedLogPath,
  parseEventPath,
  parseEventPathName,
  runEventsPrefix,
  runsPrefix,
} from "./paths.js";
export { applyEvent, emptyRunState, reduceRunState } from "./run-state.js";
export {
  WORKFLOW_RUN_DIRECTORY_PREFIX,
  WORKFLOW_RUN_KIND,
  workflowRunKind,
  type WorkflowRunKindOptions,
} from "./workflow-run-kind.js";
export type * from "./types.js";
export { appendRunEvents, MAX_BATCH_APPENDS, MAX_BATCH_BYTES, type AppendDecision, type AppendRunEventsOptions } from "./run-log-append.js";
export {
  readRunLog,
  readRunLogFromFiles,
  type BadEvent,
  type ReadRunLogFromFilesOptions,
  type ReadRunLogOptions,
  type RunLog,
} from "./run-log.js";
export { DEFAULT_PAGE_BYTES, DEFAULT_PAGE_EVENTS, MAX_PAGE_EVENTS, readRunLogPage, type RunLogPage, type RunLogPageOptions } from "./run-log.js";
export { RunSummaryCache, summarizeRunLog, type RunLogSummary, type SummarizeRunLogOptions } from "./run-log-summary.js";
export { checkCompactedLog, foldEventFiles, type CompactedLogCheck } from "./compacted-log.js";
export { BLOB_NAME } from "./run-folder.js";
export { DEFAULT_PARSED_EVENT_CACHE_BYTES, ParsedEventCache } from "./parsed-event-cache.js";
export {
  defaultEventValidator,
  subscribeKind,
  type EventValidator,
  type KindEvent,
  type KindIssue,
  type SubscribeKindOptions,
} from "./subscribe-kind.js";
export {
  DEFAULT_MAX_CATCH_UP,
  DEFAULT_MISFIRE_GRACE_MS,
  planDueTimer,
  type DueTimer,
  type FirePlan,
  type FirePlanOptions,
  type PlannedEvent,
} from "./timer-ledger.js";
export * from "./event-guards.js";
export { advanceSeries, armTimer, foldTimerEvents, timerTransition, TimerFold, type TimerFiring, type TimerHistory, type TimerStatus, type TimerTransition } from "./timer-lifecycle.js";
export { openRunLog, type OpenRunLogOptions, type RunLogDecision, type RunLogWriter } from "./run-log-writer.js";
export { resolveTimerSpec, sameTimerRequest, type TimerSpec } from "./timer-spec.js";
export { signalWaitTimerId, signalWaitTimerNumber, signalWaitTimerPrefix } from "./signal-wait-timer.js";
export { decodeRecoveryIndex, encodeRecoveryIndex, RECOVERY_INDEX_FILE, RUN_STATE_VERSION, type RunSummary } from "./recovery-index.js";
export { ARCHIVE_REF } from "./run-archive.js";
export { previewCron, type PreviewSpec, type PreviewTick } from "./schedule/preview.js";
export type { DeclaredSchedule, SyncPlan } from "./schedule/sync-plan.js";
