/**
 * Blob-level differences between two trees. Subtrees with equal oids are skipped without being
 * read, so the cost is proportional to what changed (plus the sizes of the changed folders,
 * which are merged in one pass as both are in git order).
 */
import { compareCodePoints } from "./git-object.js";
import { compareTreeEntries, unusualMode, type ParsedTree, type TreeEntry } from "./tree-object.js";
import type { Oid, PathChange } from "./types.js";

export type ReadTree = (oid: Oid) => Promise<ParsedTree>;

/** A tree's entries in git order as chunks (a tree written out of order is sorted, rare). */
function orderedChunks(tree: ParsedTree | null): readonly (readonly TreeEntry[])[] {
  if (tree === null || tree.count === 0) return [];
  return tree.sorted ? tree.chunks : [[...tree.entries].sort(compareTreeEntries)];
}

async function walk(read: ReadTree, a: Oid | null, b: Oid | null, base: string, out: PathChange[]): Promise<void> {
  if (a === b) return;
  const [ta, tb] = await Promise.all([a === null ? null : read(a), b === null ? null : read(b)]);
  const ca = orderedChunks(ta);
  const cb = orderedChunks(tb);
  // Cursors: chunk, then entry within it.
  let ci = 0;
  let i = 0;
  let cj = 0;
  let j = 0;
  while (ci < ca.length || cj < cb.length) {
    const chunkA = ca[ci];
    const chunkB = cb[cj];
    if (i === 0 && j === 0 && chunkA !== undefined && chunkA === chunkB) {
      // A chunk shared by both versions (a tree edited from the other shares the chunks it did
      // not touch): a 10 000-entry folder with one change costs ~80 compares.
      ci++;
      cj++;
      continue;
    }
    const x = chunkA?.[i];
    const y = chunkB?.[j];
    // Steps are inlined (no closure per entry: walking a big folder's edited chunks visits
    // thousands of entries per commit).
    const order = x !== undefined && x === y ? 0 : x === undefined ? 1 : y === undefined ? -1 : compareTreeEntries(x, y);
    // The same entry object (unchanged, whatever chunk it is in) steps both cursors unread.
    if (x !== y) {
      if (order < 0) await diffEntry(read, x, undefined, base, out);
      else if (order > 0) await diffEntry(read, undefined, y, base, out);
      else await diffEntry(read, x, y, base, out);
    }
    if (order <= 0 && ++i === (chunkA as readonly TreeEntry[]).length) {
      ci++;
      i = 0;
    }
    if (order >= 0 && ++j === (chunkB as readonly TreeEntry[]).length) {
      cj++;
      j = 0;
    }
  }
}

async function diffEntry(
  read: ReadTree,
  ea: TreeEntry | undefined,
  eb: TreeEntry | undefined,
  base: string,
  out: PathChange[],
): Promise<void> {
  // Gitlinks (mode 160000, never written by the store) are reported like files, with their
  // mode, so a reader sees what a push brought; they are never descended into.
  const a = ea;
  const b = eb;
  // A mode change alone (a file turned into a symlink with the same bytes) is a change too.
  if (a?.oid === b?.oid && a?.type === b?.type && a?.mode === b?.mode) return;
  const path = `${base}${(a ?? b)?.name}`;
  const leaf = (e: TreeEntry | undefined): e is TreeEntry => e !== undefined && e.type !== "tree";
  if (leaf(a) && leaf(b)) {
    out.push({ path, oid: b.oid, status: "modified", ...unusualMode(b) });
    return;
  }
  if (leaf(a)) out.push({ path, oid: a.oid, status: "deleted", ...unusualMode(a) });
  if (leaf(b)) out.push({ path, oid: b.oid, status: "added", ...unusualMode(b) });
  const ta = a?.type === "tree" ? a.oid : null;
  const tb = b?.type === "tree" ? b.oid : null;
  if (ta !== null || tb !== null) await walk(read, ta, tb, `${path}/`, out);
}

/**
 * Every blob added, modified or deleted between tree `from` and tree `to` (null: no tree),
 * with paths prefixed by `base` ("" or a folder ending in "/"), sorted by path.
 * @throws `object_corrupt` when a tree on a changed path cannot be read.
 */
export async function diffTrees(read: ReadTree, from: Oid | null, to: Oid | null, base = ""): Promise<PathChange[]> {
  const out: PathChange[] = [];
  await walk(read, from, to, base, out);
  out.sort((x, y) => compareCodePoints(x.path, y.path));
  return out;
}
