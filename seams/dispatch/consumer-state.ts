/**
 * A consumer's durable progress in one deployment: the tree of `refs/consumers/<name>` in the
 * deployment's repo. It is a history of its own (not a branch of main), moved by
 * compare-and-swap through the store's ref machinery like every other write, so it survives a
 * SIGKILL in the state of its last commit and can be read with plain git:
 *
 *   consumer.json                 {version, consumer, cursor, done, updatedAt}
 *                                 cursor: the last commit of main every event of which (and of
 *                                 every commit before it) is handled (done or parked); null =
 *                                 nothing handled yet. done: `<runId>/<seq>` of events handled
 *                                 in commits after the cursor (handled out of commit order,
 *                                 because runs are served in parallel).
 *   failing/<runId>/<seq>.json    {attempts, lastError, failedAt}: failed attempts of an event
 *                                 not yet handled, so attempts count on across restarts.
 *   parked/<runId>/<seq>.json     a dead letter: the event, its key, attempts and last error.
 *   retry/<runId>/<seq>.json      a dead letter released by `dispatch retry`: delivered again
 *                                 with fresh attempts, then removed (or parked again).
 *
 * An event is "recorded as done" exactly when its commit is at or before the cursor, or its id
 * is in `done`; only such events are never handed over again.
 */
import { WorkflowHostError } from "../../src/errors.js";
import type { CommittedReads, Principal, RepoId, RepoStore } from "../../src/substrate/types.js";
import { parseRepoId, parseRunId } from "../../src/workflow/ids.js";
import type { RunEvent } from "../../src/workflow/types.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";
import { consumerRef, eventId, parseConsumerName } from "./dispatch-keys.js";

export const CONSUMER_FILE = "consumer.json";

export interface ConsumerFile {
  readonly version: 1;
  readonly consumer: string;
  readonly cursor: string | null;
  readonly done: readonly string[];
  readonly updatedAt: string;
}

export interface FailingRecord {
  readonly attempts: number;
  readonly lastError: string;
  readonly failedAt: string;
}

/** A parked event (dead letter), and the same once released for a retry. */
export interface ParkedRecord {
  readonly repoId: string;
  readonly runId: string;
  readonly seq: number;
  readonly commitSha: string;
  readonly idempotencyKey: string;
  readonly attempts: number;
  readonly lastError: string;
  readonly parkedAt: string;
  readonly event: RunEvent;
  readonly releasedAt?: string;
}

export interface ConsumerState {
  /** The consumer ref's commit, null when the consumer has never run in this deployment. */
  readonly refSha: string | null;
  readonly cursor: string | null;
  readonly done: ReadonlySet<string>;
  readonly failing: ReadonlyMap<string, FailingRecord>;
  readonly parked: ReadonlyMap<string, ParkedRecord>;
  readonly retry: ReadonlyMap<string, ParkedRecord>;
}

export const recordPath = (folder: "failing" | "parked" | "retry", runId: string, seq: number): string => `${folder}/${runId}/${seq}.json`;

export function encodeJson(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}

export function describeError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 1_000 ? `${text.slice(0, 1_000)}…` : text;
}

const decoder = new TextDecoder();

/** Reads the `<folder>/<runId>/<seq>.json` records of a consumer tree into `into`, keyed `<runId>/<seq>`. */
export async function readFolder<T>(reads: CommittedReads, folder: string, into: Map<string, T>, warn: (msg: string) => void): Promise<void> {
  for (const run of await reads.listDir(folder)) {
    if (run.type !== "tree") continue;
    for (const file of await reads.listDir(`${folder}/${run.name}`)) {
      const seq = /^(0|[1-9][0-9]{0,15})\.json$/.exec(file.name)?.[1];
      if (file.type !== "blob" || seq === undefined) continue;
      try {
        into.set(eventId(run.name, Number(seq)), JSON.parse(decoder.decode(await reads.readBlobByOid(file.oid))) as T);
      } catch (error) {
        warn(`${folder}/${run.name}/${file.name} is not JSON; ignored (${describeError(error)})`);
      }
    }
  }
}

/**
 * Reads a consumer's state in one deployment (an unborn ref: empty state, refSha null).
 * @throws ref_corrupt, repo_not_found, authorize_denied (the store's); event_invalid when
 *   consumer.json is not this module's format
 */
export async function readConsumerState(store: RepoStore, principal: Principal, repoId: RepoId, consumer: string, warn: (msg: string) => void = () => {}): Promise<ConsumerState> {
  const ref = consumerRef(consumer);
  const refSha = await store.resolveRef(principal, repoId, ref);
  const failing = new Map<string, FailingRecord>();
  const parked = new Map<string, ParkedRecord>();
  const retry = new Map<string, ParkedRecord>();
  if (refSha === null) return { refSha, cursor: null, done: new Set(), failing, parked, retry };
  const reads = await store.openCommittedReads(principal, repoId, refSha);
  const bytes = await reads.readBlob(CONSUMER_FILE);
  let file: ConsumerFile | null = null;
  try {
    file = bytes === null ? null : (JSON.parse(decoder.decode(bytes)) as ConsumerFile);
  } catch {
    file = null;
  }
  if (file === null || file.version !== 1 || !(file.cursor === null || (typeof file.cursor === "string" && /^[0-9a-f]{40}$/.test(file.cursor))) || !Array.isArray(file.done)) {
    throw new WorkflowHostError("event_invalid", `${ref} of ${repoId.id} has no valid ${CONSUMER_FILE}`, { ref, repoId: repoId.id });
  }
  await readFolder(reads, "failing", failing, warn);
  await readFolder(reads, "parked", parked, warn);
  await readFolder(reads, "retry", retry, warn);
  return { refSha, cursor: file.cursor, done: new Set(file.done.filter((id) => typeof id === "string")), failing, parked, retry };
}

export const deploymentRepo = (repoId: string): RepoId => ({ kind: WORKFLOW_RUN_KIND, id: parseRepoId(repoId) });

/** Parses `<runId>/<seq>` as `dispatch retry|skip --event` takes it. @throws id_invalid */
export function parseEventId(value: string): { runId: string; seq: number } {
  const match = /^([^/]+)\/(0|[1-9][0-9]{0,15})$/.exec(value);
  if (match?.[1] === undefined || match[2] === undefined) throw new WorkflowHostError("id_invalid", `event ${JSON.stringify(value)} is not valid; allowed: <runId>/<seq>`, { field: "event", value });
  return { runId: parseRunId(match[1]), seq: Number(match[2]) };
}

/**
 * Releases parked events of a consumer in one deployment, in one commit on its ref:
 * "retry" moves each to `retry/` (a running or the next dispatcher delivers it again with fresh
 * attempts); "skip" removes it (the commit message and git history keep what it was).
 * Safe while a dispatcher runs: both write by compare-and-swap and touch different paths.
 * @param events `<runId>/<seq>` ids, or "all"
 * @returns the ids released
 * @throws id_invalid, record_not_found (a named event is not parked), the store's errors
 */
export async function releaseParked(store: RepoStore, principal: Principal, repoIdText: string, consumer: string, events: readonly string[] | "all", action: "retry" | "skip", nowIso: string): Promise<string[]> {
  const repoId = deploymentRepo(repoIdText);
  const name = parseConsumerName(consumer);
  const wanted = events === "all" ? null : events.map((id) => parseEventId(id));
  const result = await store.writeTreeDelta<string[]>(principal, repoId, consumerRef(name), {
    message: `dispatch ${action}: ${name}`,
    computeDelta: async (parentSha, reads) => {
      if (parentSha === null) throw new WorkflowHostError("record_not_found", `consumer ${name} has never run in ${repoId.id}`, { consumer: name, repoId: repoId.id });
      const parked = new Map<string, ParkedRecord>();
      await readFolder(reads, "parked", parked, () => {});
      const ids = wanted === null ? [...parked.keys()] : wanted.map((w) => eventId(w.runId, w.seq));
      const puts = new Map<string, string>();
      const deletes: string[] = [];
      for (const id of ids) {
        const record = parked.get(id);
        if (record === undefined) throw new WorkflowHostError("record_not_found", `event ${id} is not parked for consumer ${name} in ${repoId.id}`, { consumer: name, repoId: repoId.id, event: id });
        deletes.push(recordPath("parked", record.runId, record.seq));
        if (action === "retry") puts.set(recordPath("retry", record.runId, record.seq), encodeJson({ ...record, releasedAt: nowIso }));
      }
      return ids.length === 0 ? null : { puts, deletes, result: ids };
    },
  });
  return result.result ?? [];
}
