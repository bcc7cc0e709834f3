/**
 * The in-memory bookkeeping of one run's signal channel: which signals the log holds, which are
 * consumed, which this channel handed out, and who is waiting. Pure data, no I/O: the channel
 * feeds it events in log order and decides when dispatching is allowed.
 *
 * A signal is, per signalId: available → handed out (to an awaiter, or claimed) → consumed;
 * `release` moves a handed-out signal back to available. A SignalConsumed seen in the log makes
 * it consumed from any state. A waiter is queued → served (resolved with one signal) or removed
 * (aborted, stopped); waiters of one name are served first-in, first-out.
 */
import type { ReceivedSignal } from "./signal-channel-types.js";

/** One pending `awaitNext`. */
export interface SignalWaiter {
  readonly signalName: string;
  /**
   * False while the waiter's own preparation (the runtime's `readState`) is in flight: it is
   * not served yet, and neither are the waiters queued behind it (first-in, first-out).
   */
  ready: boolean;
  readonly resolve: (signal: ReceivedSignal) => void;
  readonly reject: (error: unknown) => void;
}

export interface SignalPool {
  /**
   * Records a SignalReceived. The first occurrence of a signalId wins (a repeated notification
   * or a duplicate delivery is ignored), as in the RunState reducer.
   * @returns true when the signal was new
   */
  addReceived(signal: ReceivedSignal): boolean;
  /** Records a SignalConsumed (idempotent); a consumed signal is never handed out. */
  markConsumed(signalId: string): void;
  /** Whether a SignalConsumed of this id was recorded. */
  isConsumed(signalId: string): boolean;
  /** Marks a signal handed out without a waiter; false when already handed out or consumed. */
  claim(signalId: string): boolean;
  /** Makes a handed-out, unconsumed signal available again; returns its name when known. */
  release(signalId: string): string | null;
  /** Queues a waiter behind the others of its name. */
  enqueue(waiter: SignalWaiter): void;
  /** Removes a queued waiter; false when it was already served or removed. */
  remove(waiter: SignalWaiter): boolean;
  /**
   * Serves queued waiters of `signalName` (every name when omitted) with the oldest available
   * signals by numeric seq, one signal per waiter, first-in first-out. Waiters are resolved
   * synchronously, after the pool's state is updated.
   */
  dispatch(signalName?: string): void;
  /** Removes every queued waiter and rejects it with `error`. */
  rejectAll(error: unknown): void;
  /** Number of queued waiters (all names). */
  waiting(): number;
}

/** Creates an empty pool. */
export function createSignalPool(): SignalPool {
  const received = new Map<string, ReceivedSignal>();
  /** Per name, available-or-handed-out signals sorted by seq; consumed ones are pruned. */
  const byName = new Map<string, ReceivedSignal[]>();
  const consumed = new Set<string>();
  const handedOut = new Set<string>();
  const waiters = new Map<string, SignalWaiter[]>();

  function insertSorted(list: ReceivedSignal[], signal: ReceivedSignal): void {
    let index = list.length;
    while (index > 0 && (list[index - 1] as ReceivedSignal).seq > signal.seq) index -= 1;
    list.splice(index, 0, signal);
  }

  function prune(signalName: string): void {
    const list = byName.get(signalName);
    if (list === undefined) return;
    const kept = list.filter((s) => !consumed.has(s.signalId));
    if (kept.length === 0) byName.delete(signalName);
    else byName.set(signalName, kept);
  }

  function oldestAvailable(signalName: string): ReceivedSignal | undefined {
    return byName.get(signalName)?.find((s) => !handedOut.has(s.signalId) && !consumed.has(s.signalId));
  }

  function serve(signalName: string): void {
    const queue = waiters.get(signalName);
    if (queue === undefined) return;
    const served: [SignalWaiter, ReceivedSignal][] = [];
    while (queue.length > 0 && (queue[0] as SignalWaiter).ready) {
      const signal = oldestAvailable(signalName);
      if (signal === undefined) break;
      const waiter = queue.shift() as SignalWaiter;
      handedOut.add(signal.signalId);
      served.push([waiter, signal]);
    }
    if (queue.length === 0) waiters.delete(signalName);
    // Resolving last keeps the pool consistent if a waiter's continuation calls back in.
    for (const [waiter, signal] of served) waiter.resolve(signal);
  }

  return {
    addReceived(signal) {
      if (received.has(signal.signalId)) return false;
      received.set(signal.signalId, signal);
      if (consumed.has(signal.signalId)) return true;
      const list = byName.get(signal.signalName) ?? [];
      insertSorted(list, signal);
      byName.set(signal.signalName, list);
      return true;
    },
    markConsumed(signalId) {
      if (consumed.has(signalId)) return;
      consumed.add(signalId);
      handedOut.delete(signalId);
      const signal = received.get(signalId);
      if (signal !== undefined) prune(signal.signalName);
    },
    isConsumed(signalId) {
      return consumed.has(signalId);
    },
    claim(signalId) {
      if (consumed.has(signalId) || handedOut.has(signalId)) return false;
      handedOut.add(signalId);
      return true;
    },
    release(signalId) {
      if (!handedOut.delete(signalId)) return null;
      return received.get(signalId)?.signalName ?? null;
    },
    enqueue(waiter) {
      const queue = waiters.get(waiter.signalName) ?? [];
      queue.push(waiter);
      waiters.set(waiter.signalName, queue);
    },
    remove(waiter) {
      const queue = waiters.get(waiter.signalName);
      const index = queue?.indexOf(waiter) ?? -1;
      if (queue === undefined || index < 0) return false;
      queue.splice(index, 1);
      if (queue.length === 0) waiters.delete(waiter.signalName);
      return true;
    },
    dispatch(signalName) {
      if (signalName !== undefined) serve(signalName);
      else for (const name of [...waiters.keys()]) serve(name);
    },
    rejectAll(error) {
      const all = [...waiters.values()].flat();
      waiters.clear();
      for (const waiter of all) waiter.reject(error);
    },
    waiting() {
      let n = 0;
      for (const queue of waiters.values()) n += queue.length;
      return n;
    },
  };
}
