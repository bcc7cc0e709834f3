/**
 * Test-local appends to a run log (`runs/<runId>/events/<seq>.json`), written only against the
 * substrate's shapes so substrate tests do not depend on the workflow model.
 */
import type { CommittedReads, KindHandler, WriteTreePreservingPrefixOptions } from "../../src/substrate/types.js";

/** A kind handler with no validation, stored under `deployments/`. */
export const plainKind: KindHandler = { kind: "test-run", directoryPrefix: "deployments" };

/** Folder holding one run's event files, ending in "/". */
export function eventsPrefix(runId: string): string {
  return `runs/${runId}/events/`;
}

/** Largest `<n>` among `<n>.json` names, or 0 when there is none. */
export function maxSeq(names: Iterable<string>): number {
  let max = 0;
  for (const name of names) {
    const match = /^(\d+)\.json$/.exec(name);
    if (match?.[1] !== undefined) max = Math.max(max, Number(match[1]));
  }
  return max;
}

/** Numeric seqs of `<n>.json` names, sorted. */
export function seqsOf(names: Iterable<string>): number[] {
  const seqs: number[] = [];
  for (const name of names) {
    const match = /^(\d+)\.json$/.exec(name);
    if (match?.[1] !== undefined) seqs.push(Number(match[1]));
  }
  return seqs.sort((a, b) => a - b);
}

/**
 * `writeTreePreservingPrefix` options that append `<max+1>.json` with `body` (given the seq) to
 * the run's events; the result is the seq written.
 */
export function appendNext(runId: string, body: (seq: number) => unknown, message = `append to ${runId}`): WriteTreePreservingPrefixOptions<number> {
  return {
    preservePrefix: eventsPrefix(runId),
    message,
    merge: (existing) => {
      const seq = maxSeq(existing.keys()) + 1;
      const files = new Map<string, Uint8Array | string>(existing);
      files.set(`${seq}.json`, JSON.stringify(body(seq)));
      return { files, result: seq };
    },
  };
}

/** Next seq of a run computed from pinned reads (for `writeTreeDelta`). */
export async function nextSeqFromReads(reads: CommittedReads, runId: string): Promise<number> {
  const entries = await reads.listDir(eventsPrefix(runId));
  return maxSeq(entries.map((e) => e.name)) + 1;
}
