/** The per-attempt time limit of a delivery (`ConsumerOptions.timeoutMs`). */
import type { WorkflowHostError } from "../../src/errors.js";
import type { TimerHandle, Timers } from "../../src/time/clock.js";

export interface DeliveryTimeout {
  /** Rejects with the limit's error once `timeoutMs` passed (on the injected timers); never resolves. */
  readonly expired: Promise<never>;
  /** Ends the limit (the attempt settled first). */
  clear(): void;
}

/**
 * Starts a time limit of `timeoutMs` ms: when it passes, `controller` is aborted with
 * `error()` (the handler's signal) and `expired` rejects with it.
 */
export function startDeliveryTimeout(timers: Timers, timeoutMs: number, controller: AbortController, error: () => WorkflowHostError): DeliveryTimeout {
  let timer: TimerHandle | null = null;
  const expired = new Promise<never>((_, reject) => {
    timer = timers.setTimeout(() => {
      const reason = error();
      controller.abort(reason);
      reject(reason);
    }, timeoutMs);
  });
  return {
    expired,
    clear() {
      if (timer !== null) timers.clearTimeout(timer);
    },
  };
}
