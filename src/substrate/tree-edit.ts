/**
 * Applies path edits to a tree by rewriting only the trees on changed paths: descend from the
 * root along the edited paths, reuse every untouched subtree by oid, re-serialise the trees
 * whose entries changed. Nothing is written here; the new trees come back as objects.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import { compareCodePoints, type GitObject } from "./git-object.js";
import {
  type BigTreeBeside,
  BLOB_MODE,
  EMPTY_TREE_OID,
  entryAt,
  findEntry,
  indexOfEntry,
  makeTree,
  type ParsedTree,
  TREE_MODE,
  type TreeEntry,
  unusualMode,
} from "./tree-object.js";
import { diffTrees, type ReadTree } from "./tree-diff.js";
import { editTree, reOidTree } from "./tree-splice.js";
import type { Oid, PathChange } from "./types.js";

/** Edits in application order: `clear` subtree, then `deletes`, then `puts`. */
export interface TreeEdits {
  /** Segments of a folder whose whole content is replaced ([] is the root). */
  readonly clear?: readonly string[];
  /** Blob or folder paths to remove, as segments. */
  readonly deletes?: readonly (readonly string[])[];
  /**
   * Blob paths (as segments) and the oid each must hold; or, with `within`, a folder the caller
   * built from the folder at that path (folder-append.ts): the entry then names the new tree,
   * and `within` is its blob changes (they are reported as the edit's own). Such a folder is
   * not read; its trees are not in {@link TreeEditResult.pending}.
   */
  readonly puts?: readonly { readonly path: readonly string[]; readonly oid: Oid; readonly within?: readonly PathChange[]; readonly at?: EntryPosition }[];
  /**
   * The blob changes of the built folders put with `within: DEFERRED_CHANGES`, listed only when
   * someone reads {@link TreeEditResult.changes} (a fire commit's twenty thousand event paths are
   * mostly never asked for). Such a folder must differ from the one it replaces (an append does).
   */
  readonly deferredChanges?: () => readonly PathChange[];
  /**
   * Work to run while the first big folder the edit rewrites is hashed (tree-object.ts
   * BigTreeBeside): a commit's pack hashes its start meanwhile (design notes §81).
   */
  readonly beside?: BigTreeBeside;
}

/** `within` of a built folder whose changes come from {@link TreeEdits.deferredChanges}. */
export const DEFERRED_CHANGES: readonly PathChange[] = Object.freeze([]);

/**
 * Where a put's name is in the folder above it, as the caller found it: that folder's oid and
 * the entry's index there. Taken instead of a search when the folder edited is that very tree
 * and the entry at that index has the put's name; otherwise ignored.
 */
export interface EntryPosition {
  readonly tree: Oid;
  readonly index: number;
}

export interface TreeEditResult {
  /** The new root tree (equal to the base when nothing changed). */
  readonly rootOid: Oid;
  /** Trees created by the edit, parents after children. */
  readonly newTrees: readonly GitObject[];
  /** The same trees parsed, keyed by oid (for reads before they are written). */
  readonly pending: ReadonlyMap<Oid, ParsedTree>;
  /** Every changed blob path, sorted (listed on first read when some were deferred, see TreeEdits.deferredChanges). */
  readonly changes: readonly PathChange[];
  /**
   * With deferred changes: {@link changes} as a function that holds only what lists them (not
   * this result's trees), for a caller that keeps it for later.
   */
  readonly changesLater?: () => readonly PathChange[];
  /**
   * True when {@link changes} is exactly what diffing the base tree against the new root
   * reports (`diffTrees`), so a reader may take it instead of diffing. False when the edit also
   * dropped entries no change records (names git refuses, see below) or rebuilt a tree that was
   * not in git order.
   */
  readonly exact: boolean;
  /**
   * The new oid of every folder the edit descended into, by path (segments joined by "/", no
   * trailing slash; the root is not listed): null for a folder the edit removed.
   */
  readonly folders: ReadonlyMap<string, Oid | null>;
  /**
   * Trees of {@link newTrees} spliced from an earlier version of the same folder that they
   * differ from: new to the repository unless its history went back to an earlier state, so a
   * writer need not look for them in its packs (a duplicate would only cost space until merged).
   * Folders built from nothing (a folder copied whole) are not listed.
   */
  readonly spliced: ReadonlySet<Oid>;
}

interface EditNode {
  put?: Oid;
  /** Set for a folder the caller built (see TreeEdits.puts). */
  within?: readonly PathChange[];
  /** Where the caller found this name in the folder above (see TreeEdits.puts). */
  at?: EntryPosition;
  /** The old content here is dropped before children are applied. */
  reset: boolean;
  /** Null until a child is added: a file's node (most nodes) never has one. */
  children: Map<string, EditNode> | null;
}

const newNode = (): EditNode => ({ reset: false, children: null });
const NO_CHILDREN: ReadonlyMap<string, EditNode> = new Map();
const NO_NAMES: readonly string[] = [];

/** The child `name` of `node`, made when missing. */
function childOf(node: EditNode, name: string): EditNode {
  let children = node.children;
  if (children === null) {
    children = new Map();
    node.children = children;
  }
  let child = children.get(name);
  if (child === undefined) {
    child = newNode();
    children.set(name, child);
  }
  return child;
}

/** A write that would replace a gitlink (pushed with git; the store never writes one). */
function gitlinkInTheWay(path: string): WorkflowHostError {
  return new WorkflowHostError(
    "path_violation",
    `${path} is a gitlink (a submodule commit, mode 160000) pushed with git; the store never replaces one, so nothing may be written at or under it`,
    { path },
  );
}

/** A built folder (TreeEdits.puts `within`) whose original is not a folder at that path of the base. */
function builtFolderMissing(path: string): WorkflowHostError {
  return new WorkflowHostError("object_corrupt", `${path} was rebuilt from a folder the base tree does not hold there`, { path });
}

function conflict(path: readonly string[]): WorkflowHostError {
  const shown = path.join("/");
  return new WorkflowHostError(
    "path_violation",
    `path ${describeValue(shown)} is written both as a file and as a folder in one commit`,
    { path: shown },
  );
}

function buildTrie(edits: TreeEdits): EditNode {
  const root = newNode();
  const descend = (path: readonly string[], upto: number): EditNode => {
    let node = root;
    for (let i = 0; i < upto; i++) {
      node = childOf(node, path[i] as string);
    }
    return node;
  };
  if (edits.clear !== undefined) {
    const node = descend(edits.clear, edits.clear.length);
    node.reset = true;
    node.children = null;
  }
  for (const path of edits.deletes ?? []) {
    const node = descend(path, path.length);
    node.reset = true;
    node.children = null;
    delete node.put;
  }
  for (const { path, oid, within, at } of edits.puts ?? []) {
    let node = root;
    for (let i = 0; i < path.length; i++) {
      node = childOf(node, path[i] as string);
      if (i < path.length - 1 && node.put !== undefined) throw conflict(path.slice(0, i + 1));
    }
    if ((node.children?.size ?? 0) > 0) throw conflict(path);
    node.put = oid;
    if (within !== undefined) node.within = within;
    if (at !== undefined) node.at = at;
  }
  return root;
}

/** One folder being rewritten by applyTreeEdits: what the edit of its children fills in. */
interface FolderEdit {
  readonly old: ParsedTree | null;
  /** The folder's path with a trailing slash ("" for the root). */
  readonly base: string;
  readonly edits: Map<string, TreeEntry | null>;
  readonly positions: Map<string, number>;
  readonly folders: FolderOids;
  readonly changes: PathChange[];
  readonly deferredChanges: (() => readonly PathChange[]) | undefined;
  /** Set once a folder put with DEFERRED_CHANGES was taken. */
  deferredUsed: boolean;
  /**
   * Built folders that replace a folder found at its hinted index (EntryPosition) of a tree in
   * git order, in the order taken: their indices and new entries, kept out of `edits` and
   * `positions` (see takeReOids). Null until the first.
   */
  reAts: number[] | null;
  reEntries: TreeEntry[] | null;
}

/** The entry `name` of `old` (a hint checked first) and its index, noted in `positions` for a sorted folder. */
function locate(old: ParsedTree | null, name: string, child: EditNode, positions: Map<string, number>): TreeEntry | undefined {
  const hint = child.at;
  const index = old === null || !old.sorted ? -1 : hint !== undefined && hint.tree === old.oid && entryAt(old, hint.index)?.name === name ? hint.index : indexOfEntry(old, name);
  const existing = old === null ? undefined : old.sorted ? entryAt(old, index) : findEntry(old, name);
  if (old !== null && old.sorted) positions.set(name, index);
  return existing;
}

/**
 * Takes the children from `children` while they are folders the caller built (TreeEdits.puts
 * with `within`), each checked against the old folder and noted as an edit; synchronous, and a
 * function of its own so the hot loop of a fire commit (thousands of runs' folders) is compiled
 * small, without the async rewrite around it (see design notes).
 * @returns the first child that is anything else (left for the caller), or undefined at the end
 * @throws as the general loop in applyTreeEdits, in the same order
 */
function putBuiltFolders(children: Iterator<[string, EditNode]>, folder: FolderEdit): [string, EditNode] | undefined {
  const { old, base, edits, positions, folders, changes } = folder;
  // The hints name this very tree when it is in git order: then the entry there is the one.
  const hintTree = old !== null && old.sorted ? old.oid : null;
  for (;;) {
    const step = children.next();
    if (step.done === true) return undefined;
    const [name, child] = step.value;
    const put = child.put;
    const within = child.within;
    if (put === undefined || within === undefined) return step.value;
    const hint = child.at;
    const hinted = hint !== undefined && hint.tree === hintTree ? entryAt(old as ParsedTree, hint.index) : undefined;
    const atHint = hinted !== undefined && hinted.name === name;
    const existing = atHint ? hinted : locate(old, name, child, positions);
    if (existing?.type === "commit") throw gitlinkInTheWay(`${base}${name}`);
    // A folder built by the caller from the one here: its changes are the caller's.
    if (existing?.type !== "tree") throw builtFolderMissing(`${base}${name}`);
    folders.built(base, name, put);
    if (existing.oid === put) continue;
    if (within === DEFERRED_CHANGES) {
      if (folder.deferredChanges === undefined) throw new TypeError("a folder put with deferred changes needs TreeEdits.deferredChanges");
      folder.deferredUsed = true;
    } else for (const change of within) changes.push(change);
    const entry: TreeEntry = { name, mode: TREE_MODE, oid: put, type: "tree" };
    if (atHint && existing.mode === TREE_MODE) {
      // An entry re-oided in place, its index known: kept out of the maps (takeReOids).
      const index = (hint as EntryPosition).index;
      if (folder.reAts === null) {
        folder.reAts = [index];
        folder.reEntries = [entry];
      } else {
        folder.reAts.push(index);
        (folder.reEntries as TreeEntry[]).push(entry);
      }
      continue;
    }
    if (atHint) positions.set(name, (hint as EntryPosition).index);
    edits.set(name, entry);
  }
}

/**
 * The folder's re-oided built folders (FolderEdit.reAts) as its new tree when they are all its
 * edits (a fire commit's `runs/`: no map of them, no search, no sort, reOidTree); otherwise they
 * are moved into `edits` and `positions` for the general splice, and undefined.
 */
function takeReOids(folder: FolderEdit, beside: BigTreeBeside | undefined): { tree: ParsedTree; object: GitObject } | undefined {
  const ats = folder.reAts;
  const entries = folder.reEntries;
  const old = folder.old;
  if (ats === null || entries === null || old === null) return undefined;
  folder.reAts = null;
  folder.reEntries = null;
  if (folder.edits.size === 0 && (old.refusedNames?.length ?? 0) === 0) {
    const built = reOidTree(old, ats, entries, beside);
    if (built !== undefined) return built;
  }
  for (let i = 0; i < ats.length; i++) {
    const entry = entries[i] as TreeEntry;
    folder.edits.set(entry.name, entry);
    folder.positions.set(entry.name, ats[i] as number);
  }
  return undefined;
}

/**
 * TreeEditResult.folders. The folders the caller built (putBuiltFolders: a fire commit's every
 * run) are noted as their parent's path and their name and joined into the map on its first
 * read: most writes never read it for them (the fire committer takes their oids by position,
 * WriteResult.appended), and a path string and a map entry per run were ~10 MB of a
 * 20,000-fire burst's garbage. A built folder is never also descended into, so an entry the
 * edit set itself is kept as it is.
 */
class FolderOids extends Map<string, Oid | null> {
  /**
   * Built folders not joined yet: parent path (with its slash), name, oid, then the next; null
   * when none. Made as a literal of the first three: an empty `[]` is an array of small integers
   * to V8 until its first push, and the optimised fire loop that pushes into a new one each
   * commit was undone by it ("not a Smi", design notes §58).
   */
  #built: string[] | null = null;

  built(base: string, name: string, oid: Oid): void {
    if (this.#built === null) this.#built = [base, name, oid];
    else this.#built.push(base, name, oid);
  }

  #join(): void {
    const built = this.#built;
    if (built === null) return;
    this.#built = null;
    for (let i = 0; i < built.length; i += 3) {
      const path = `${built[i] as string}${built[i + 1] as string}`;
      if (!super.has(path)) super.set(path, built[i + 2] as Oid);
    }
  }

  override get(path: string): Oid | null | undefined {
    this.#join();
    return super.get(path);
  }

  override has(path: string): boolean {
    this.#join();
    return super.has(path);
  }

  override get size(): number {
    this.#join();
    return super.size;
  }

  override forEach(callback: (value: Oid | null, key: string, map: Map<string, Oid | null>) => void, thisArg?: unknown): void {
    this.#join();
    super.forEach(callback, thisArg);
  }

  override entries(): MapIterator<[string, Oid | null]> {
    this.#join();
    return super.entries();
  }

  override keys(): MapIterator<string> {
    this.#join();
    return super.keys();
  }

  override values(): MapIterator<Oid | null> {
    this.#join();
    return super.values();
  }

  override [Symbol.iterator](): MapIterator<[string, Oid | null]> {
    this.#join();
    return super[Symbol.iterator]();
  }
}

/** `changes` with the `deferred` ones added, sorted, on the first call (its closure holds only these two). */
function listLater(changes: PathChange[], deferred: () => readonly PathChange[]): () => readonly PathChange[] {
  let listed: readonly PathChange[] | null = null;
  return () => {
    if (listed === null) {
      for (const change of deferred()) changes.push(change);
      changes.sort((x, y) => compareCodePoints(x.path, y.path));
      listed = changes;
    }
    return listed;
  };
}

/**
 * Applies `edits` to the tree `baseOid` (null: empty).
 * @returns the new root (the empty tree when everything was removed), the new tree objects and
 *   the blob-level changes.
 * @param pause awaited before each folder is edited (a caller's time slicer); default none
 * @throws `path_violation` when one path is both a file and a folder in the edits;
 *   `object_corrupt` when a tree on an edited path cannot be read.
 */
export async function applyTreeEdits(read: ReadTree, baseOid: Oid | null, edits: TreeEdits, pause?: () => Promise<void>): Promise<TreeEditResult> {
  const root = buildTrie(edits);
  const pending = new Map<Oid, ParsedTree>();
  const newTrees: GitObject[] = [];
  const changes: PathChange[] = [];
  let exact = true;
  const folders = new FolderOids();
  const spliced = new Set<Oid>();
  let deferredUsed = false;
  const deferredChanges = edits.deferredChanges;
  const beside = edits.beside;
  const readAny: ReadTree = (oid) => {
    const hit = pending.get(oid);
    return hit !== undefined ? Promise.resolve(hit) : read(oid);
  };

  async function rewrite(oldOid: Oid | null, node: EditNode, base: string, isRoot: boolean): Promise<Oid | null> {
    if (pause !== undefined) await pause();
    if (node.reset && oldOid !== null) {
      // Build the replacement from nothing, then report it as a diff against the old subtree,
      // so a file re-put with the same bytes is not reported as deleted and added.
      // What the rebuild itself recorded (every put as added) is replaced by that diff.
      const mark = changes.length;
      const fresh = await rewrite(null, { ...node, reset: false }, base, isRoot);
      changes.length = mark;
      for (const change of await diffTrees(readAny, oldOid, fresh, base, pause)) changes.push(change);
      return fresh;
    }
    const old = oldOid === null ? null : await read(oldOid);
    // Only the edited names are looked at; every other entry is carried over untouched.
    const edits = new Map<string, TreeEntry | null>();
    // Where each edited name is in the old tree, so the splice does not search for it again.
    const positions = new Map<string, number>();
    const folder: FolderEdit = { old, base, edits, positions, folders, changes, deferredChanges, deferredUsed: false, reAts: null, reEntries: null };
    const children = (node.children ?? NO_CHILDREN)[Symbol.iterator]();
    for (;;) {
      // Runs of folders the caller built (a fire commit's every run) are taken synchronously.
      const next = putBuiltFolders(children, folder);
      if (folder.deferredUsed) deferredUsed = true;
      if (next === undefined) break;
      const [name, child] = next;
      const path = `${base}${name}`;
      const existing = locate(old, name, child, positions);
      // What a push put there is kept: an edit that would silently drop it is refused instead.
      if (existing?.type === "commit") throw gitlinkInTheWay(path);
      if (child.put !== undefined) {
        if (existing?.type === "blob" && existing.oid === child.put) continue;
        // Keep an executable bit set by someone else; everything the store creates is 100644.
        const mode = existing?.type === "blob" && existing.mode === "100755" ? existing.mode : BLOB_MODE;
        const entry: TreeEntry = { name, mode, oid: child.put, type: "blob" };
        if (existing?.type === "blob") changes.push({ path, oid: child.put, status: "modified", ...unusualMode(entry) });
        else {
          if (existing?.type === "tree") for (const change of await diffTrees(readAny, existing.oid, null, `${path}/`, pause)) changes.push(change);
          changes.push({ path, oid: child.put, status: "added" });
        }
        edits.set(name, entry);
        continue;
      }
      if (existing?.type === "blob" && (child.reset || (child.children?.size ?? 0) > 0)) {
        changes.push({ path, oid: existing.oid, status: "deleted", ...unusualMode(existing) });
      }
      const oldSub = existing?.type === "tree" ? existing.oid : null;
      const newSub = await rewrite(oldSub, child, `${path}/`, false);
      folders.set(path, newSub);
      if (newSub === oldSub && existing?.type === "tree") continue;
      if (newSub === null) {
        if (existing !== undefined) edits.set(name, null);
      } else {
        edits.set(name, { name, mode: TREE_MODE, oid: newSub, type: "tree" });
      }
    }
    const reOided = takeReOids(folder, beside);
    // Names git's fsck refuses (a `..` or `.git` pushed by hand) are not carried into the new
    // tree: they would make every later commit fail `git fsck --strict`. They are dropped
    // without a change record (nothing a reader accepted is lost: readers report such entries
    // and never read them as events).
    for (const name of old?.refusedNames ?? NO_NAMES) {
      if (edits.has(name)) continue;
      edits.set(name, null);
      exact = false;
    }
    if (reOided === undefined && edits.size === 0 && old !== null) return old.oid;
    if (old !== null && !old.sorted) exact = false;
    const built =
      reOided ??
      (old === null
        ? makeTree([...edits.values()].filter((e): e is TreeEntry => e !== null))
        : editTree(old, edits, positions, beside));
    // An empty folder cannot exist in git; only the root may be the empty tree.
    if (built.tree.count === 0 && !isRoot) return null;
    if (built.tree.oid === oldOid) return oldOid;
    if (!pending.has(built.tree.oid)) {
      pending.set(built.tree.oid, built.tree);
      newTrees.push(built.object);
      if (old !== null) spliced.add(built.tree.oid);
    }
    return built.tree.oid;
  }

  const rootOid = (await rewrite(baseOid, root, "", true)) ?? EMPTY_TREE_OID;
  const deferred = deferredUsed ? deferredChanges : undefined;
  if (deferred === undefined) {
    changes.sort((x, y) => compareCodePoints(x.path, y.path));
    return { rootOid, newTrees, pending, changes, exact, folders, spliced };
  }
  const changesLater = listLater(changes, deferred);
  return {
    rootOid,
    newTrees,
    pending,
    get changes() {
      return changesLater();
    },
    changesLater,
    exact,
    folders,
    spliced,
  };
}
