/**
 * Ids of the durable timers behind `waitForSignal(..., {timeoutMs})`: `wait:<signalName>:<n>`,
 * n = 1, 2, … per run and name. The id is derived from the log, never from memory, so a wait
 * re-issued after a restart finds the timer its predecessor armed. Names too long to fit the
 * timerId limit (256 characters) use `wait-h:<first 40 hex of sha256(name)>:<n>`; the
 * different head keeps the two forms from ever colliding.
 */
import { createHash } from "node:crypto";

const LONG_NAME = 200;

/** The part of every wait-timer id of `signalName` before the number. */
export function signalWaitTimerPrefix(signalName: string): string {
  if (signalName.length <= LONG_NAME) return `wait:${signalName}:`;
  return `wait-h:${createHash("sha256").update(signalName).digest("hex").slice(0, 40)}:`;
}

/** The n-th (n ≥ 1) wait-timer id of `signalName`. */
export function signalWaitTimerId(signalName: string, n: number): string {
  return `${signalWaitTimerPrefix(signalName)}${n}`;
}

/**
 * The number n of a wait-timer id of `signalName`, or null when `timerId` is not one. The part
 * after the prefix must be a decimal without leading zeros, so a name containing `:` never
 * matches another name's ids.
 */
export function signalWaitTimerNumber(signalName: string, timerId: string): number | null {
  const prefix = signalWaitTimerPrefix(signalName);
  if (!timerId.startsWith(prefix)) return null;
  const rest = timerId.slice(prefix.length);
  if (!/^[1-9][0-9]{0,14}$/.test(rest)) return null;
  return Number(rest);
}
