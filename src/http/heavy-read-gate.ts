/**
 * A bound on the heavy reads the HTTP face serves at once (listing timers across runs, listing
 * schedules, planning a sync): each gives the event loop a turn every few ms (a time slicer), so
 * none stalls the host, but every one in flight holds its runs' logs or a declared set in memory
 * and shares the CPU with the others. At most `concurrency` run at once; the next `queue` wait
 * their turn in arrival order; one more is refused with `busy` (503, `Retry-After`), since
 * waiting requests would otherwise pile up without bound.
 */
import { describeValue, WorkflowHostError } from "../errors.js";
import { HttpError } from "./http-errors.js";

/** Default heavy reads run at once. */
export const DEFAULT_HEAVY_READ_CONCURRENCY = 2;
/** Default heavy reads waiting for a turn before one more is refused. */
export const DEFAULT_HEAVY_READ_QUEUE = 64;

export interface HeavyReadGate {
  /**
   * Runs `work` once fewer than `concurrency` others run; resolves or rejects as it does.
   * @param gone aborted when the client that asked went away (its connection closed): a read
   *   still waiting then leaves the queue and its work never runs (one already running goes on)
   * @throws HttpError `busy` (503, `Retry-After: 1`) when `queue` others wait already, or when
   *   `gone` was aborted before the read's turn came
   */
  run<T>(work: () => Promise<T>, gone?: AbortSignal): Promise<T>;
  /** Heavy reads running and waiting now. */
  load(): { readonly running: number; readonly waiting: number };
}

/**
 * @param concurrency heavy reads at once (a whole number ≥ 1, default {@link DEFAULT_HEAVY_READ_CONCURRENCY})
 * @param queue heavy reads waiting at most (a whole number ≥ 0, default {@link DEFAULT_HEAVY_READ_QUEUE})
 * @throws config_invalid for a bound that is not such a number
 */
export function createHeavyReadGate(concurrency: number = DEFAULT_HEAVY_READ_CONCURRENCY, queue: number = DEFAULT_HEAVY_READ_QUEUE): HeavyReadGate {
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new WorkflowHostError("config_invalid", `heavyReads.concurrency ${describeValue(concurrency)} is not valid; allowed: a whole number >= 1`);
  if (!Number.isSafeInteger(queue) || queue < 0) throw new WorkflowHostError("config_invalid", `heavyReads.queue ${describeValue(queue)} is not valid; allowed: a whole number >= 0`);
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next === undefined) running -= 1;
    else next();
  };
  const left = (): HttpError => new HttpError("busy", "the client closed the connection before the read's turn came; nothing was read", { "retry-after": "1" });
  return {
    async run<T>(work: () => Promise<T>, gone?: AbortSignal): Promise<T> {
      if (gone?.aborted === true) throw left();
      if (running < concurrency) running += 1;
      else if (waiting.length >= queue) {
        throw new HttpError("busy", `${running} heavy reads run and ${waiting.length} wait (at most ${concurrency} at once, ${queue} waiting); send it again in a second`, { "retry-after": "1" });
      } else {
        // The slot of the read that ends is handed over as it stands (running unchanged). A
        // client gone meanwhile takes its place out of the queue: a reader that asks and hangs
        // up, again and again, holds no turn from the others.
        await new Promise<void>((resolve, reject) => {
          const turn = (): void => {
            gone?.removeEventListener("abort", leave);
            resolve();
          };
          const leave = (): void => {
            const at = waiting.indexOf(turn);
            if (at >= 0) waiting.splice(at, 1);
            reject(left());
          };
          waiting.push(turn);
          gone?.addEventListener("abort", leave, { once: true });
        });
      }
      try {
        return await work();
      } finally {
        release();
      }
    },
    load: () => ({ running, waiting: waiting.length }),
  };
}
