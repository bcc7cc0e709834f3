/**
 * Graceful shutdown on process signals, for programs that embed a host (the `serve` and `demo`
 * commands use it). The library never installs signal handlers by itself: a host embedded in a
 * larger server leaves shutdown to that server.
 */
import { silentLogger, type Logger } from "../logger.js";

/** Where signals come from: `process` by default; any emitter with `on`/`off` in tests. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
}

export interface StopOnSignalsOptions {
  /** Signals that stop the host. Default `["SIGINT", "SIGTERM"]`. */
  readonly signals?: readonly NodeJS.Signals[];
  /** Default `process`. */
  readonly source?: SignalSource;
  readonly logger?: Logger;
  /**
   * Called for a signal that arrives while the stop is still running (a second Ctrl-C). Default:
   * log and keep waiting; a CLI typically exits at once here.
   */
  readonly onRepeat?: (signal: NodeJS.Signals) => void;
}

export interface SignalStop {
  /**
   * Resolves with the signal's name once `host.stop()` finished after a signal; rejects with
   * stop()'s error. Never settles when no signal arrives (use `dispose` to stop listening).
   */
  readonly stopped: Promise<NodeJS.Signals>;
  /** The signal that started the stop, or null while none arrived. */
  readonly received: NodeJS.Signals | null;
  /** Removes the listeners; a signal after this is not handled here. Idempotent. */
  dispose(): void;
}

/**
 * Stops `host` on the first of `signals`, then removes its listeners.
 * @param host anything with an idempotent `stop()` (a {@link WorkflowHost})
 * @returns the pending stop and a disposer; see {@link SignalStop}
 */
export function stopOnSignals(host: { stop(): Promise<void> }, opts: StopOnSignalsOptions = {}): SignalStop {
  const source: SignalSource = opts.source ?? process;
  const signals = opts.signals ?? ["SIGINT", "SIGTERM"];
  const logger = opts.logger ?? silentLogger;
  let received: NodeJS.Signals | null = null;
  let disposed = false;
  let settle: { resolve: (signal: NodeJS.Signals) => void; reject: (error: unknown) => void } | null = null;
  const stopped = new Promise<NodeJS.Signals>((resolve, reject) => {
    settle = { resolve, reject };
  });

  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    for (const signal of signals) source.off(signal, listener);
  };

  function listener(signal: NodeJS.Signals): void {
    if (received !== null) {
      logger.warn(`${signal} received while stopping after ${received}`);
      opts.onRepeat?.(signal);
      return;
    }
    received = signal;
    logger.info(`${signal} received: stopping`);
    host.stop().then(
      () => {
        dispose();
        settle?.resolve(signal);
      },
      (error: unknown) => {
        dispose();
        settle?.reject(error);
      },
    );
  }

  for (const signal of signals) source.on(signal, listener);
  return {
    stopped,
    get received() {
      return received;
    },
    dispose,
  };
}
