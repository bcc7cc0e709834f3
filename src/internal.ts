/**
 * `workflow-host/internal`: the building blocks behind the public root — event schemas and
 * constructors, the timer lifecycle fold, the run-log writer and verbs, planners, caches,
 * path helpers, the host lock. For tools and tests built on workflow-host's own layers; these
 * may change in any release, unlike the root.
 */
export * from "./index.js";
export * from "../seams/index.js";
export * from "./workflow/index.js";
export { acquireHostLock, inspectHostLock, DEFAULT_LOCK_STALE_MS } from "./host/host-lock.js";
export { createSystemTimers } from "./time/clock.js";
export { DEFAULT_REF } from "./substrate/ref-name.js";
export { setTimerDurably, type SetTimerOutcome } from "../seams/scheduler/set-timer.js";
export { deliverSignalDurably, type SignalDelivery } from "../seams/signals/deliver-signal.js";
