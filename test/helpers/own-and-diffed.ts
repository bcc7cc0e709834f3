/**
 * The changes a writer's own subscribers get (recorded by the write) beside those a second store
 * on the same volume gets (by diffing trees), for checking that the two always agree.
 */
import { createFsFromVolume, Volume } from "memfs";
import { allowAll, createRepoStore } from "../../src/substrate/index.js";
import type { CommitChange, RepoId, RepoStore } from "../../src/substrate/types.js";
import { outOfTurns } from "./wait-turns.js";

/**
 * Opens two stores on one fresh memfs volume, runs `before` (not observed), subscribes both to
 * `main` from its head, runs `write`, and collects until each side saw `commits` commits (or
 * 2,000 event-loop turns passed).
 * @returns the writer's own changes and the other store's, commit by commit
 */
export async function ownAndDiffedChanges(
  write: (writer: RepoStore, rid: RepoId) => Promise<void>,
  commits: number,
  before?: (writer: RepoStore, rid: RepoId) => Promise<void>,
): Promise<{ own: CommitChange[]; seen: CommitChange[] }> {
  const fs = createFsFromVolume(new Volume());
  const open = (): RepoStore => createRepoStore({ dataDir: "/data", fs, kindHandlers: [{ kind: "k", directoryPrefix: "k" }], authorize: allowAll, watch: false });
  const writer = open();
  const other = open();
  const rid: RepoId = { kind: "k", id: "repo" };
  await writer.initRepo(null, rid);
  await before?.(writer, rid);
  const own: CommitChange[] = [];
  const seen: CommitChange[] = [];
  const abort = new AbortController();
  const collect = async (from: AsyncIterable<CommitChange>, into: CommitChange[]): Promise<void> => {
    for await (const c of from) into.push(c);
  };
  const mine = collect(writer.subscribe(null, rid, "main", { from: "head", signal: abort.signal }), own);
  const theirs = collect(other.subscribe(null, rid, "main", { from: "head", signal: abort.signal }), seen);
  await write(writer, rid);
  other.poke();
  const since = performance.now();
  for (let turn = 0; !outOfTurns(turn, 2_000, since) && (own.length < commits || seen.length < commits); turn++) await new Promise<void>((resolve) => setImmediate(resolve));
  abort.abort();
  await Promise.all([mine, theirs]);
  await writer.close();
  await other.close();
  return { own, seen };
}
