/** The host's two seams onto the run log (docs/design.md §5, §6). */
export { createWorkflowHostScheduler } from "./scheduler.js";
export type {
  CancelOutcome,
  QueuedTimer,
  SchedulerEvent,
  SchedulerOptions,
  SchedulerStats,
  WorkflowHostScheduler,
} from "./scheduler-types.js";
export { createWorkflowHostSignalChannel } from "./signal-channel.js";
export type {
  DeliverResult,
  ReceivedSignal,
  SignalChannelOptions,
  WorkflowHostSignalChannel,
} from "./signal-channel-types.js";
export { cancelTimerDurably, type CancelTimerDurablyOptions } from "./timer-cancel.js";
export { createRunEventFeed } from "./run-event-feed.js";
export type { RunEventAttachment, RunEventFeed, RunEventFeedOptions, RunEventListener } from "./run-event-feed.js";
