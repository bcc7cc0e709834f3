/**
 * Acknowledgements: an operator's record, kept in the deployment repo, that a known problem of
 * its log (a bad event pushed with git, a gap in the seqs) has been seen, so `serve` and `check`
 * stop reporting it. Nothing in the log is rewritten: the record lives on a ref of its own,
 * {@link ACKNOWLEDGED_REF}, whose history is the audit trail and whose tip holds one JSON file,
 * {@link ACKNOWLEDGED_FILE}. Read it with plain git:
 * `git --git-dir=<repo> show refs/workflow-host/acknowledged:acknowledged.json`.
 *
 * A problem is acknowledged by its path, its error code and the blob it is about (its object id,
 * or null for a problem with no file, such as a missing seq). Another bad file at the same
 * path (after a force push) is a new problem and is reported again.
 */
import { WorkflowHostError } from "../errors.js";
import type { CommittedReads, Oid, Principal, RepoStore } from "../substrate/types.js";
import { parseRepoId } from "../workflow/ids.js";
import { WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";

/** The ref acknowledgements are committed to, beside `refs/heads/main`. */
export const ACKNOWLEDGED_REF = "refs/workflow-host/acknowledged";
/** The file at the tip of {@link ACKNOWLEDGED_REF}: a JSON array of {@link Acknowledgement}. */
export const ACKNOWLEDGED_FILE = "acknowledged.json";

/** One acknowledged problem. */
export interface Acknowledgement {
  /** Path in the repo (`runs/r1/events/4.json`). */
  readonly path: string;
  /** The problem's error code (`event_invalid`, …). */
  readonly code: string;
  /** Object id of the blob at `path` when acknowledged; null when the problem has no file. */
  readonly oid: Oid | null;
  readonly seq: number | null;
  /** When it was acknowledged (RFC 3339 UTC). */
  readonly at: string;
  /** Who acknowledged it (free text: a user name, a ticket). */
  readonly by: string;
}

/** A problem to acknowledge or to look up. */
export interface ProblemKey {
  readonly path: string;
  readonly code: string;
  readonly oid: Oid | null;
}

/** The lookup key of a problem. */
export function acknowledgementKey(problem: ProblemKey): string {
  return `${problem.path}\u0000${problem.code}\u0000${problem.oid ?? ""}`;
}

/**
 * The acknowledgements of one deployment.
 * @returns every acknowledgement, oldest first; none when the ref does not exist
 * @throws repo_id_invalid, repo_not_found, ref_corrupt, authorize_denied; event_invalid when
 *   the file at the ref's tip is not a JSON array of acknowledgements
 */
export async function readAcknowledgements(store: RepoStore, repoId: string, principal: Principal = null): Promise<Acknowledgement[]> {
  const rid = { kind: WORKFLOW_RUN_KIND, id: parseRepoId(repoId) };
  if ((await store.resolveRef(principal, rid, ACKNOWLEDGED_REF)) === null) return [];
  return parseFile(await store.openCommittedReads(principal, rid, ACKNOWLEDGED_REF), repoId);
}

/**
 * Records problems as acknowledged, in one commit on {@link ACKNOWLEDGED_REF} (made under the
 * repo lock, re-read after a lost race, so concurrent acknowledgements are all kept). Problems
 * already acknowledged are left as they are; nothing is committed when all of them are.
 * @returns how many were added and the commit (null when nothing was committed)
 * @throws as {@link readAcknowledgements}; the store's write errors (ref_locked, ref_conflict)
 */
export async function acknowledgeProblems(
  store: RepoStore,
  repoId: string,
  problems: readonly (ProblemKey & { readonly seq: number | null })[],
  opts: { readonly at: string; readonly by: string; readonly principal?: Principal },
): Promise<{ added: number; commitSha: Oid | null }> {
  const rid = { kind: WORKFLOW_RUN_KIND, id: parseRepoId(repoId) };
  const result = await store.writeTreeDelta<number>(opts.principal ?? null, rid, ACKNOWLEDGED_REF, {
    message: `Acknowledge ${problems.length === 1 ? problems[0]?.path ?? "" : `${problems.length} problems`}`,
    computeDelta: async (parentSha, reads) => {
      const existing = parentSha === null ? [] : await parseFile(reads, repoId);
      const known = new Set(existing.map(acknowledgementKey));
      const added: Acknowledgement[] = [];
      for (const p of problems) {
        const key = acknowledgementKey(p);
        if (known.has(key)) continue;
        known.add(key);
        added.push({ path: p.path, code: p.code, oid: p.oid, seq: p.seq, at: opts.at, by: opts.by });
      }
      if (added.length === 0) return null;
      return { puts: { [ACKNOWLEDGED_FILE]: `${JSON.stringify([...existing, ...added], null, 2)}\n` }, result: added.length };
    },
  });
  return { added: result.result ?? 0, commitSha: result.committed ? result.commitSha : null };
}

/**
 * The object id of the blob at `path` in `reads`, or null when there is none (a missing file,
 * a folder).
 */
export async function blobOidAt(reads: CommittedReads, path: string): Promise<Oid | null> {
  const slash = path.lastIndexOf("/");
  if (slash <= 0) return null;
  const name = path.slice(slash + 1);
  try {
    const entry = (await reads.listDir(path.slice(0, slash))).find((e) => e.name === name);
    return entry !== undefined && entry.type === "blob" ? entry.oid : null;
  } catch {
    return null;
  }
}

async function parseFile(reads: CommittedReads, repoId: string): Promise<Acknowledgement[]> {
  const bytes = await reads.readBlob(ACKNOWLEDGED_FILE);
  if (bytes === null) return [];
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    value = undefined;
  }
  const valid =
    Array.isArray(value) &&
    value.every(
      (a: unknown) =>
        typeof a === "object" && a !== null && typeof (a as Acknowledgement).path === "string" && typeof (a as Acknowledgement).code === "string" && ((a as Acknowledgement).oid === null || typeof (a as Acknowledgement).oid === "string"),
    );
  if (!valid) {
    throw new WorkflowHostError("event_invalid", `${ACKNOWLEDGED_FILE} at ${ACKNOWLEDGED_REF} of ${repoId} is not a JSON array of {path, code, oid}; fix or delete that ref`, { repoId, ref: ACKNOWLEDGED_REF });
  }
  return value as Acknowledgement[];
}
