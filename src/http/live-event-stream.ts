/**
 * `GET /v1/events`: the monitor's live events sent to one client as server-sent events, each
 * only when the client's principal may read the event's deployment (asked once per deployment
 * per stream, answered in order). A comment line every {@link KEEP_ALIVE_MS} keeps proxies from
 * closing an idle stream. The stream ends when the client goes, the server closes, the client
 * falls {@link MAX_UNSENT_BYTES} behind (dropped at once; it reconnects and reloads), or the
 * token it was opened with expires.
 *
 * Expiry: a stream keeps the principal it was opened with, so it checks that principal's expiry
 * itself: before each event and each ping is written (so nothing is sent past it, whatever the
 * timers), and by a timer armed for the instant it falls due (so an idle stream ends then too;
 * the timer checks the clock again when it fires, and is armed anew when the wall clock was set
 * back). At expiry it writes `event: error` with `{"code":"token_expired","message":"the token
 * has expired"}` and ends; its client's reconnect is then 401 `token_expired`.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Timers } from "../time/clock.js";
import type { HostMonitor, LiveEvent } from "./host-monitor.js";

/** Idle time (ms) after which a `: ping` comment is sent. */
const KEEP_ALIVE_MS = 15_000;

/**
 * Bytes of events written but not yet taken by the client (`res.writableLength`) past which the
 * stream is ended: a client that stops reading would otherwise hold every event of a burst in
 * this process's memory. The client reconnects after the stream's `retry` and reloads.
 */
export const MAX_UNSENT_BYTES = 1_048_576;

export interface LiveEventStreamOptions {
  readonly monitor: HostMonitor;
  /** Arms the keep-alive pings. */
  readonly timers: Timers;
  /** Whether the client may read the events of `repoId`; a rejection counts as no. */
  readonly mayRead: (repoId: string) => Promise<boolean>;
  /** Open streams' end functions; this stream adds its own and removes it when it ends. */
  readonly streams: Set<() => void>;
  /** Whether the token the stream was opened with has expired (by the handler's clock); default never. */
  readonly expired?: () => boolean;
  /** Ms until that token expires (0 when it has), or null when it never does; default never. */
  readonly expiresInMs?: () => number | null;
}

/** Longest wait armed at once for a token's expiry (ms): node's timers hold at most 2^31 − 1 ms; a later expiry is waited for in steps. */
const MAX_EXPIRY_WAIT_MS = 2_147_483_647;

/** Takes over `reply` and streams live events until the client or the server closes. */
export function streamLiveEvents(request: FastifyRequest, reply: FastifyReply, opts: LiveEventStreamOptions): void {
  const { monitor, timers, mayRead, streams } = opts;
  const decided = new Map<string, Promise<boolean>>();
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
  res.write("retry: 2000\n: live events of workflow-host\n\n");
  let chain = Promise.resolve();
  const expired = opts.expired ?? (() => false);
  const expiresInMs = opts.expiresInMs ?? (() => null);
  /** Ends the stream, with the reason as its last event, when its token has expired; true then. */
  const endIfExpired = (): boolean => {
    if (res.writableEnded) return true;
    if (!expired()) return false;
    res.write(`event: error\ndata: ${JSON.stringify({ code: "token_expired", message: "the token has expired" })}\n\n`);
    end();
    return true;
  };
  const send = (event: LiveEvent): void => {
    let ok = decided.get(event.repoId);
    if (ok === undefined) decided.set(event.repoId, (ok = mayRead(event.repoId)));
    const check = ok;
    chain = chain.then(async () => {
      if (!(await check) || endIfExpired()) return;
      if (res.writableLength > MAX_UNSENT_BYTES) {
        // Ended and dropped: the unsent bytes are freed now, not when the client reads again.
        end();
        res.destroy();
      }
      else res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    });
  };
  const unsubscribe = monitor.subscribe(send);
  let ping: unknown = null;
  const keepAlive = (): void => {
    ping = timers.setTimeout(() => {
      if (endIfExpired()) return;
      res.write(": ping\n\n");
      keepAlive();
    }, KEEP_ALIVE_MS);
  };
  keepAlive();
  let expiry: unknown = null;
  const watchExpiry = (): void => {
    const inMs = expiresInMs();
    if (inMs === null || endIfExpired()) return;
    expiry = timers.setTimeout(watchExpiry, Math.min(Math.max(inMs, 1), MAX_EXPIRY_WAIT_MS));
  };
  const end = (): void => {
    unsubscribe();
    timers.clearTimeout(ping);
    timers.clearTimeout(expiry);
    streams.delete(end);
    if (!res.writableEnded) res.end();
  };
  streams.add(end);
  request.raw.on("close", end);
  watchExpiry();
  monitor.recordRequest("/v1/events", "GET", 200);
}
