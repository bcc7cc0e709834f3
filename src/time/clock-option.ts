/**
 * The one name of the wall-clock option: `clock: Clock`. Functions that took the instant as
 * `nowMs` (epoch ms, or a function returning it) still accept it, deprecated, so existing
 * callers keep working; `clock` wins when both are given.
 */
import { WorkflowHostError } from "../errors.js";
import type { Clock } from "./clock.js";

/** The wall clock of a call: `clock` (one of the two is required; checked on entry). */
export interface ClockOption {
  /** Wall clock: what "now" is for this call. */
  readonly clock?: Clock;
  /** @deprecated Use `clock`. Now, in ms since the epoch. */
  readonly nowMs?: number;
}

/**
 * The clock an options object names, or the fixed instant of a deprecated `nowMs` as a clock.
 * @param component - named in the error
 * @throws config_invalid when neither `clock` nor `nowMs` is given
 */
export function clockOf(opts: { readonly clock?: Clock | undefined; readonly nowMs?: number | (() => number) | undefined }, component: string): Clock {
  if (opts.clock !== undefined) return opts.clock;
  const nowMs = opts.nowMs;
  if (nowMs === undefined) throw new WorkflowHostError("config_invalid", `${component}: give a clock`, { field: "clock" });
  return typeof nowMs === "function" ? () => new Date(nowMs()) : () => new Date(nowMs);
}
