/** The host's two seams onto the run log (docs/design.md §5, §6). */
export { createWorkflowHostScheduler } from "./scheduler/scheduler.js";
export type {
  CancelOutcome,
  CommittedEvents,
  QueuedTimer,
  SchedulerEvent,
  SchedulerOptions,
  SchedulerStats,
  ServedPendingTimers,
  WorkflowHostScheduler,
} from "./scheduler/scheduler-types.js";
export { createWorkflowHostSignalChannel } from "./signals/signal-channel.js";
export type {
  DeliverResult,
  ReceivedSignal,
  SignalChannelOptions,
  WorkflowHostSignalChannel,
} from "./signals/signal-channel-types.js";
export { cancelTimerDurably, type CancelTimerDurablyOptions } from "./scheduler/timer-cancel.js";
export { createScheduleControls } from "./scheduler/schedule-controls.js";
export type { ScheduleControls, ScheduleControlsOptions, ScheduleDescription, ScheduleSummary } from "./scheduler/schedule-controls.js";
export { createRunEventFeed } from "./signals/run-event-feed.js";
export type { RunEventAttachment, RunEventFeed, RunEventFeedOptions, RunEventListener } from "./signals/run-event-feed.js";
export { createDispatcher } from "./dispatch/dispatcher.js";
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
} from "./dispatch/dispatch-types.js";
export { idempotencyKey } from "./dispatch/dispatch-keys.js";
export { releaseParked, readConsumerState, type ParkedRecord } from "./dispatch/consumer-state.js";
export { consumerLag, type ConsumerLag } from "./dispatch/consumer-report.js";
export { deliveryBody, signBody, verifySignature, SIGNATURE_HEADER } from "./dispatch/http-target.js";
export { createClusterCoordinator, DEFAULT_LEASE_TTL_MS } from "./cluster/cluster-coordinator.js";
export type { ClusterCoordinator, ClusterCoordinatorOptions, ClusterEvent, ClusterOptions, ClusterStats } from "./cluster/cluster-coordinator.js";
