/**
 * Reads pinned to one root tree. Every call walks from that root, so the answers never change
 * whatever happens to the ref afterwards; trees come from the shared oid cache.
 */
import { WorkflowHostError } from "../errors.js";
import type { GitObject } from "./git-object.js";
import { isHexOid } from "./hex-oid.js";
import { findInTreeBytes, indexTreeBytes, type TreeBytes } from "./tree-bytes.js";
import { dirEntriesOf, findEntry, type ParsedTree, type TreeEntry } from "./tree-object.js";
import { parseFolderPath, parseRepoPath } from "./repo-path.js";
import type { CommittedReads, DirEntry, Oid } from "./types.js";

/** Where pinned reads get objects from (the object store, maybe with not-yet-written objects). */
export interface ObjectSource {
  readTree(oid: Oid): Promise<ParsedTree>;
  readBlob(oid: Oid): Promise<Uint8Array>;
  /** The same objects, read without filling the caches (see {@link CommittedReads.scan}). */
  readonly scanning?: ObjectSource;
  /** Several blobs at once, in order (see {@link CommittedReads.readBlobsByOid}). */
  readBlobs?(oids: readonly Oid[]): Promise<Uint8Array[]>;
  /** One object as stored, unparsed (see {@link CommittedReads.pointOid}); optional. */
  read?(oid: Oid): Promise<GitObject>;
  /** The parsed tree when the caches hold it, without reading (see {@link CommittedReads.pointOid}); optional. */
  cachedTree?(oid: Oid): ParsedTree | undefined;
  /**
   * The tree's entries as `dirEntriesOf(readTree(oid))` lists them, for a walk that lists each
   * folder once (see {@link CommittedReads.listTree}); optional (without it, the tree is read).
   */
  listTree?(oid: Oid): Promise<readonly DirEntry[]>;
  /** See {@link CommittedReads.stored}; optional. */
  stored?(oid: Oid): boolean | Promise<boolean>;
  /** See {@link CommittedReads.packedAll}; optional. */
  packedAll?(hexOids: string): Uint8Array;
  /** See {@link CommittedReads.storeMark}; optional. */
  storeMark?(): Promise<string | null>;
}

/** Folders whose stored bytes one {@link CommittedReads} keeps for point lookups (newest last). */
const POINT_FOLDERS_KEPT = 2;

function checkOid(oid: Oid): void {
  if (!isHexOid(oid)) {
    throw new WorkflowHostError("object_corrupt", `${String(oid)} is not a 40-hex object id`, { oid });
  }
}

/**
 * Trees a scan's reads keep themselves (see {@link CommittedReads.scan}): the folders of the few
 * runs a recovery reads ahead (two each). Kept longer, each tree outlived a young-generation
 * collection and was copied into the old generation, where a cold recovery of 100,000 runs piled
 * up a fifth of what it promoted and the heap grew to hold it.
 */
const SCAN_RECENT_TREES = 32;

/** `source` with the last {@link SCAN_RECENT_TREES} trees it read kept (oldest dropped first). */
function keepingRecentTrees(source: ObjectSource): ObjectSource {
  const recent = new Map<Oid, Promise<ParsedTree>>();
  return {
    readBlob: (oid) => source.readBlob(oid),
    ...(source.readBlobs === undefined ? {} : { readBlobs: (oids: readonly Oid[]) => (source.readBlobs as (o: readonly Oid[]) => Promise<Uint8Array[]>)(oids) }),
    // A tree listed by oid is listed once by a walk (a run's folder, its events/): not kept.
    ...(source.listTree === undefined ? {} : { listTree: (oid: Oid) => (source.listTree as (o: Oid) => Promise<readonly DirEntry[]>)(oid) }),
    readTree(oid) {
      let tree = recent.get(oid);
      if (tree === undefined) {
        tree = source.readTree(oid);
        tree.catch(() => recent.delete(oid));
        recent.set(oid, tree);
        if (recent.size > SCAN_RECENT_TREES) recent.delete(recent.keys().next().value as Oid);
      }
      return tree;
    },
  };
}

/**
 * Creates reads of the tree `rootTreeOid` (null: an unborn ref, everything is absent).
 * @param commitSha reported as `commitSha` (null for an unborn ref or a prospective tree).
 * Paths follow the store's rules (`path_violation` otherwise); folders may end in "/".
 */
export function createCommittedReads(source: ObjectSource, commitSha: Oid | null, rootTreeOid: Oid | null): CommittedReads {
  async function entryAt(segments: readonly string[]): Promise<TreeEntry | null> {
    if (rootTreeOid === null) return null;
    let tree = await source.readTree(rootTreeOid);
    for (let i = 0; i < segments.length; i++) {
      const entry = findEntry(tree, segments[i] as string);
      if (entry === undefined) return null;
      if (i === segments.length - 1) return entry;
      if (entry.type !== "tree") return null;
      tree = await source.readTree(entry.oid);
    }
    return null;
  }

  async function treeOid(path: string): Promise<Oid | null> {
    const segments = parseFolderPath(path);
    if (segments.length === 0) return rootTreeOid;
    const entry = await entryAt(segments);
    return entry === null || entry.type === "commit" ? null : entry.oid;
  }

  /** Stored bytes of folders looked into by `pointOid`, by tree oid (see POINT_FOLDERS_KEPT). */
  const pointFolders = new Map<Oid, Promise<TreeBytes | null>>();
  /** The folder `oid` indexed for point lookups (null: not a well-formed tree, parse it instead). */
  function folderBytes(read: (oid: Oid) => Promise<GitObject>, oid: Oid): Promise<TreeBytes | null> {
    let made = pointFolders.get(oid);
    if (made === undefined) {
      made = read(oid).then((object) => (object.type === "tree" ? indexTreeBytes(object.content) : null));
      made.catch(() => pointFolders.delete(oid));
      pointFolders.set(oid, made);
      if (pointFolders.size > POINT_FOLDERS_KEPT) pointFolders.delete(pointFolders.keys().next().value as Oid);
    }
    return made;
  }

  return {
    commitSha,
    async pointOid(path: string): Promise<Oid | null> {
      const segments = parseFolderPath(path);
      if (segments.length === 0) return rootTreeOid;
      const read = source.read?.bind(source);
      const parent = segments.length === 1 ? (rootTreeOid === null ? null : { type: "tree", oid: rootTreeOid }) : await entryAt(segments.slice(0, -1));
      if (read === undefined || parent === null || parent.type !== "tree" || source.cachedTree?.(parent.oid) !== undefined) return treeOid(path);
      const bytes = await folderBytes(read, parent.oid);
      const entry = bytes === null ? undefined : findInTreeBytes(bytes, segments[segments.length - 1] as string);
      // A folder not in git's order, or not a well-formed tree: read as treeOid reads it.
      if (entry === undefined) return treeOid(path);
      return entry === null || entry.type === "commit" ? null : entry.oid;
    },
    async listDir(path: string): Promise<readonly DirEntry[]> {
      const segments = parseFolderPath(path);
      if (rootTreeOid === null) return [];
      if (segments.length === 0) return dirEntriesOf(await source.readTree(rootTreeOid));
      const entry = await entryAt(segments);
      if (entry?.type !== "tree") return [];
      return dirEntriesOf(await source.readTree(entry.oid));
    },
    async listTree(oid: Oid): Promise<readonly DirEntry[]> {
      checkOid(oid);
      if (source.listTree !== undefined) return source.listTree(oid);
      return dirEntriesOf(await source.readTree(oid));
    },
    async readBlob(path: string): Promise<Uint8Array | null> {
      const entry = await entryAt(parseRepoPath(path));
      if (entry?.type !== "blob") return null;
      return source.readBlob(entry.oid);
    },
    async readBlobByOid(oid: Oid): Promise<Uint8Array> {
      checkOid(oid);
      return source.readBlob(oid);
    },
    async readBlobsByOid(oids: readonly Oid[]): Promise<Uint8Array[]> {
      for (const oid of oids) checkOid(oid);
      if (source.readBlobs !== undefined) return source.readBlobs(oids);
      const out: Uint8Array[] = [];
      for (const oid of oids) out.push(await source.readBlob(oid));
      return out;
    },
    treeOid,
    ...(source.stored === undefined ? {} : { stored: (oid: Oid) => (source.stored as (o: Oid) => boolean | Promise<boolean>)(oid) }),
    ...(source.packedAll === undefined ? {} : { packedAll: (hexOids: string) => (source.packedAll as (h: string) => Uint8Array)(hexOids) }),
    ...(source.storeMark === undefined ? {} : { storeMark: () => (source.storeMark as () => Promise<string | null>)() }),
    ...(source.read === undefined
      ? {}
      : {
          async readTreeBytes(oid: Oid): Promise<Uint8Array | null> {
            checkOid(oid);
            const parsed = source.cachedTree?.(oid);
            if (parsed !== undefined) return parsed.content;
            const object = await (source.read as (o: Oid) => Promise<GitObject>)(oid);
            return object.type === "tree" ? object.content : null;
          },
        }),
    scan() {
      return createCommittedReads(keepingRecentTrees(source.scanning ?? source), commitSha, rootTreeOid);
    },
  };
}
