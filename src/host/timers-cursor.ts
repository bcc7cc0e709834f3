/**
 * The place of a pending timer in the listing's order (fireAt, then repo, run and timer id; see
 * list-pending-timers.ts), and the cursor text a page of that listing hands out as `nextAfter`:
 * the same for `workflow-host timers --after` and `GET /v1/timers?after=`.
 */

/** Where a page of pending timers starts: after the timer with this place in the listing's order. */
export interface TimersCursor {
  /** The last listed timer's fireAt, epoch ms. */
  readonly fireAtMs: number;
  readonly repoId: string;
  readonly runId: string;
  readonly timerId: string;
}

/** Longest cursor text {@link decodeTimersCursor} reads (characters). */
const MAX_CURSOR_CHARS = 4_096;

/** The cursor a page hands out as `nextAfter`: base64url of `[fireAtMs, repoId, runId, timerId]` as JSON (opaque to clients). */
export function encodeTimersCursor(cursor: TimersCursor): string {
  return Buffer.from(JSON.stringify([cursor.fireAtMs, cursor.repoId, cursor.runId, cursor.timerId]), "utf8").toString("base64url");
}

/**
 * Reads a cursor {@link encodeTimersCursor} wrote.
 * @returns the cursor, or null for text that is not one (not base64url, longer than 4,096
 *   characters, not JSON of a safe integer and three strings)
 */
export function decodeTimersCursor(raw: string): TimersCursor | null {
  if (raw.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(raw)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 4 || !Number.isSafeInteger(parsed[0]) || !parsed.slice(1).every((p) => typeof p === "string")) return null;
  const [fireAtMs, repoId, runId, timerId] = parsed as [number, string, string, string];
  return { fireAtMs, repoId, runId, timerId };
}

/** The listing's order: by fireAt (epoch ms), then repo, run and timer id (plain code-unit order); negative when `a` comes first. */
export function compareTimerPlaces(a: TimersCursor, b: TimersCursor): number {
  if (a.fireAtMs !== b.fireAtMs) return a.fireAtMs - b.fireAtMs;
  const ka = `${a.repoId}\u0000${a.runId}\u0000${a.timerId}`;
  const kb = `${b.repoId}\u0000${b.runId}\u0000${b.timerId}`;
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** Whether the timer at (`fireAtMs`, repo, run, timer) comes after `cursor` in the listing's order. */
export function afterTimersCursor(cursor: TimersCursor, fireAtMs: number, repoId: string, runId: string, timerId: string): boolean {
  return compareTimerPlaces({ fireAtMs, repoId, runId, timerId }, cursor) > 0;
}
