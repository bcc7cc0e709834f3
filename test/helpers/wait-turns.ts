/**
 * How long a test's wait for real I/O may go on. Waits count event-loop turns, never time: but
 * on a busy machine one file read through the thread pool can outlast thousands of turns of an
 * otherwise idle loop, so a wait that gives up after a fixed number of turns fails by the
 * machine's load, not by the code. A wait gives up only once it has taken its turns and
 * {@link WAIT_MS} of real time has passed; nothing is asserted about either.
 */
export const WAIT_MS = 30_000;

/**
 * Whether a wait begun at `since` (`performance.now()`) that has taken `turn` turns should give up.
 * @param maxTurns the turns it takes at least (as many as an idle machine could ever need)
 */
export function outOfTurns(turn: number, maxTurns: number, since: number): boolean {
  return turn >= maxTurns && performance.now() - since > WAIT_MS;
}
