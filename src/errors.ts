/**
 * The one error class of workflow-host. Every failure the library reports on purpose is a
 * `WorkflowHostError` with a stable `code`; callers and tests branch on `code`, never on the
 * message text. The message is one sentence that starts with `<code>: `, names the bad value
 * and says what is allowed.
 */

/** Every stable error code, grouped by the layer that raises it. */
export type ErrorCode =
  // ids, times, events (src/workflow)
  | "repo_id_invalid"
  | "id_invalid"
  | "time_invalid"
  | "cron_invalid"
  | "event_invalid"
  | "payload_too_large"
  /** A page of a run's log asked for outside what is allowed: an `after` cursor that is not a seq, a `limit` or byte budget out of range (or a summary's `maxReports` that is not a whole number >= 0). */
  | "page_invalid"
  // git substrate (src/substrate)
  | "authorize_denied"
  | "path_violation"
  /** A file's content given to a write is neither bytes (a Uint8Array) nor a string; nothing was written. `data.path` names the file. */
  | "content_invalid"
  | "push_rejected"
  | "ref_conflict"
  | "ref_locked"
  | "ref_corrupt"
  /** The ref was moved back to one of its own ancestors behind a running host: nothing is committed there until it is restored (or the host restarts). */
  | "ref_rewound"
  /**
   * A git object that is there but fails its own check (a torn file, a pack entry failing its
   * CRC-32, content hashing to another oid): `data.oid`, and `data.damaged`. Naming one run
   * (`data.runId`, `data.path`), it is that run's problem as `object_missing`
   * is (same rules, same HTTP 409); a `runs/` folder, root or tip commit fails the deployment
   * (HTTP 500).
   */
  | "object_corrupt"
  /**
   * A git object a run's log needs is not in the repository (lost by a disk fault, a bad copy, a
   * partial fetch): reported for that run (an event's blob: a bad event at its seq; its folder or
   * `events/` folder: the run is skipped), never fatal to the deployment. `data.oid`, `data.path`.
   * A write that decides from the run's whole log (schedule pause, resume, trigger, backfill;
   * setting a timer; delivering, consuming or waiting for a signal) refuses such a run before
   * writing, and a single run's view cannot show a run whose folder is lost: `data.runId`,
   * `data.repoId`, `data.unreadableRun: true`, the message naming what is lost
   * (`unreadableRunError`). HTTP 409 (see `UNREADABLE_RUN_STATUS`).
   */
  | "object_missing"
  | "repo_not_found"
  | "run_not_found"
  /** The run left the live tree: retention moved it to the archive ref (refs/archive/runs); it can be read, not changed. */
  | "run_archived"
  /** A file-system call failed for a reason outside the content (EROFS, EACCES, EIO, ENOSPC); `data.errno`. */
  | "io_failed"
  | "kind_unknown"
  | "store_stopped"
  // seams and host
  | "timer_not_found"
  /** A schedule control named a series that is not an armed cron series of the run. */
  | "schedule_not_found"
  /** A backfill range holds more slots than one backfill fires. */
  | "backfill_too_large"
  | "channel_stopped"
  | "scheduler_stopped"
  | "host_locked"
  | "host_stopped"
  | "aborted"
  // dispatch (seams/dispatch)
  | "config_invalid"
  | "consumer_exists"
  | "delivery_failed"
  | "dispatcher_stopped"
  | "record_not_found"
  // cluster mode (seams/cluster)
  /** The deployment's remote refused a push: its ref was not at the expected old value (someone else moved it). */
  | "remote_rejected"
  /** The deployment's remote could not be reached, or git failed against it; fires wait and are retried. */
  | "remote_unavailable"
  /** A write to a deployment whose lease this host does not hold (another host serves it). */
  | "lease_not_held"
  /** PostgreSQL (the lease table) could not be reached or refused a query. */
  | "cluster_unavailable"
  /**
   * A folder or file below a repository resolves (through a symbolic link) outside the data dir;
   * nothing was read or written there. `data.path` is the path relative to the data dir.
   */
  | "path_escapes_data_dir"
  // CLI
  | "data_dir_not_found"
  | "usage";

export class WorkflowHostError extends Error {
  override readonly name = "WorkflowHostError";
  /** Stable machine-readable reason; see {@link ErrorCode}. */
  readonly code: ErrorCode;
  /** The inputs that led to the error (ids, paths, values), for logs and callers. */
  readonly data: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    detail: string,
    data: Record<string, unknown> = {},
    options: { cause?: unknown } = {},
  ) {
    super(`${code}: ${detail}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.data = data;
  }
}

/** True when `error` is a {@link WorkflowHostError}, optionally with the given `code`. */
export function isWorkflowHostError(error: unknown, code?: ErrorCode): error is WorkflowHostError {
  return error instanceof WorkflowHostError && (code === undefined || error.code === code);
}

/** Formats any value for an error message: strings quoted and cut to 80 characters. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") {
    const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
    return JSON.stringify(shown);
  }
  if (value === undefined) return "undefined";
  // JSON would print Infinity and NaN as null.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  try {
    const json = JSON.stringify(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return String(value);
  }
}
