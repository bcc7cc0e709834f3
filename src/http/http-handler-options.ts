/** Options of `createHttpHandler`. */
import type { Logger } from "../logger.js";
import type { Authorize, Principal } from "../substrate/types.js";
import type { Clock, Timers } from "../time/clock.js";
import type { TimeSlicer } from "../time/time-slicer.js";
import type { HostMonitor } from "./host-monitor.js";
import type { Authenticate, TokenAuth } from "./http-tokens.js";

export interface HttpHandlerOptions {
  /**
   * Tokens from `loadTokenFile`/`parseTokenFile`; or give `authenticate` and `authorize`. A
   * token whose entry has `expiresAt` is refused from that instant on by {@link clock} (401
   * `token_expired`), and a live stream opened with it ends then.
   */
  readonly tokens?: TokenAuth;
  /**
   * Token → principal (null: 401 `token_invalid`). Used when `tokens` is not given. A principal
   * that is an object with a finite number `expiresAtMs` (ms since the epoch) expires as a token
   * file's `expiresAt` does (see `principalExpiresAtMs`).
   */
  readonly authenticate?: Authenticate;
  /** The principal's right on a deployment (action `read` or `write`). Used when `tokens` is not given. */
  readonly authorize?: Authorize;
  /**
   * The host's monitor: metrics, recent fires and live events. Create it before the host and
   * pass `onEvent: monitor.onEvent` to `createWorkflowHost`, or fires are never seen.
   */
  readonly monitor: HostMonitor;
  /** Principal the handler's own store calls run as (the host's `principal`). Default null. */
  readonly principal?: Principal;
  /** Clock for `dueInMs`, cron next ticks and tokens' expiry. Default the system clock. */
  readonly clock?: Clock;
  /**
   * Timers for the live event stream's keep-alive pings and its token's expiry, and the short
   * waits of `GET …/timers` for a served deployment's tail (10 ms each); their `now` (monotonic
   * ms) times the writes for the commit histogram. Default the system's, unref'd (they never
   * keep the process up).
   */
  readonly timers?: Timers;
  /** Largest request body (bytes, default 1 MiB); larger is 413 and nothing is written. */
  readonly bodyLimitBytes?: number;
  /** Where unexpected failures (500) are logged in full. Default silent. */
  readonly logger?: Logger;
  /** Serve the dashboard at `/` (default true). */
  readonly dashboard?: boolean;
  /** Ref holding the run logs (default `DEFAULT_REF` ("refs/heads/main"), as the host's). */
  readonly ref?: string;
  /**
   * A fresh time slicer per heavy read (listing timers across runs, their next ticks), so that
   * read gives the event loop a turn every few ms: the lock's heartbeat, fires and other
   * requests go on meanwhile. Default `createTimeSlicer()` (`DEFAULT_SLICE_MS`,
   * src/time/time-slicer.ts).
   */
  readonly timeSlicer?: () => TimeSlicer;
  /**
   * Heavy reads (GET timers across runs, GET schedules, POST schedules/sync) served at once
   * (`concurrency`, default 2) and waiting their turn (`queue`, default 64); one more is 503
   * `busy` with `Retry-After: 1` (src/http/heavy-read-gate.ts).
   */
  readonly heavyReads?: { readonly concurrency?: number; readonly queue?: number };
}
