/**
 * Reads and writes the objects of one bare repository.
 *
 * Writes are crash-safe loose objects: deflate into a temp file inside `objects/`, then rename
 * it to `objects/xx/yyyy…`, so a reader (this process, another one, or git) sees either no file
 * or a whole one; isomorphic-git would write the final path in place. All writes of a commit go
 * through {@link ObjectStore.writeObjects}, the one place to change should commits become pack
 * files later.
 *
 * Reads take loose objects directly and fall back to isomorphic-git for packs (`git push`,
 * `git gc`). Parsed trees, commits and blobs are cached by oid: an oid names its content forever.
 */
import { randomBytes } from "node:crypto";
import { constants as zlibConstants, deflateSync, inflateSync } from "node:zlib";
import { readObject } from "isomorphic-git";
import { WorkflowHostError } from "../errors.js";
import { errnoCode, type FsAdapter } from "./fs-adapter.js";
import { decodeCommit, type GitObject, type ObjectType, type ParsedCommit, unwrapObject, wrapObject } from "./git-object.js";
import { decodeTree, type ParsedTree } from "./tree-object.js";
import type { LruCache } from "./lru-cache.js";
import type { Oid } from "./types.js";

/** Caches shared by every repository of a store; keys are `<repo key>\0<oid>`. */
export interface ObjectCaches {
  readonly trees: LruCache<string, ParsedTree>;
  readonly commits: LruCache<string, ParsedCommit>;
  readonly blobs: LruCache<string, Uint8Array>;
  /** isomorphic-git's own cache object (pack indexes); shared so packs are indexed once. */
  readonly packCache: object;
}

export interface ObjectStore {
  /**
   * One object, checked against its oid.
   * @throws `object_corrupt` naming the oid when it is missing, torn or hashes differently.
   */
  read(oid: Oid): Promise<GitObject>;
  /** A parsed tree (cached). @throws `object_corrupt` when missing or not a tree. */
  readTree(oid: Oid): Promise<ParsedTree>;
  /** A parsed commit (cached). @throws `object_corrupt` when missing or not a commit. */
  readCommit(oid: Oid): Promise<ParsedCommit>;
  /** A blob's bytes (a fresh copy; cached). @throws `object_corrupt` when missing or not a blob. */
  readBlob(oid: Oid): Promise<Uint8Array>;
  /**
   * Stores objects as loose objects (a blob already stored loose is skipped), at most 8 file
   * writes in flight. Resolves once every object is in its final place (and flushed, with
   * durability "fsync"): only then may a ref point at them. A failure leaves no partial object
   * under its final name, only unreferenced whole ones.
   */
  writeObjects(objects: readonly GitObject[]): Promise<void>;
  /** Remembers trees that were just written, so the next commit does not re-read them. */
  rememberTrees(trees: Iterable<ParsedTree>): void;
}

export interface ObjectStoreOptions {
  readonly fs: FsAdapter;
  readonly gitdir: string;
  /** Distinguishes this repository's entries in the shared caches. */
  readonly repoKey: string;
  readonly caches: ObjectCaches;
  readonly durable: boolean;
}

const BLOB_CACHE_MAX_BYTES = 256 * 1024;
const WRITE_PARALLELISM = 8;
const STORE_UNCOMPRESSED_ABOVE_BYTES = 64 * 1024;

/**
 * zlib level for a loose object: 1 (git's own `core.looseCompression` default) for ordinary
 * objects; 0 (stored, still a valid zlib stream) for big ones — a 10 000-entry folder is
 * rewritten on every commit that touches it, mostly 20-byte hashes that barely compress, and
 * level 1 would cost ~6x the time of everything else in the commit. `git gc` packs and
 * delta-compresses them either way.
 */
function compressionLevel(object: GitObject): number {
  return object.content.byteLength > STORE_UNCOMPRESSED_ABOVE_BYTES ? zlibConstants.Z_NO_COMPRESSION : zlibConstants.Z_BEST_SPEED;
}

function corrupt(oid: string, reason: string, cause?: unknown): WorkflowHostError {
  return new WorkflowHostError(
    "object_corrupt",
    `git object ${oid} cannot be read: ${reason}`,
    { oid, reason },
    cause === undefined ? {} : { cause },
  );
}

/** Creates the object store of the bare repository at `gitdir`. */
export function createObjectStore(opts: ObjectStoreOptions): ObjectStore {
  const { fs, gitdir, repoKey, caches, durable } = opts;
  const objectsDir = `${gitdir}/objects`;
  const knownDirs = new Set<string>();
  const tempPrefix = randomBytes(4).toString("hex");
  let tempCounter = 0;

  const loosePath = (oid: Oid): string => `${objectsDir}/${oid.slice(0, 2)}/${oid.slice(2)}`;

  async function readPacked(oid: Oid): Promise<GitObject> {
    let result: { type: string; object: unknown };
    try {
      result = await readObject({ fs: fs.raw as never, gitdir, oid, format: "content", cache: caches.packCache });
    } catch (error) {
      throw corrupt(oid, "missing (neither loose nor in a pack)", error);
    }
    const content = result.object;
    if (!(content instanceof Uint8Array)) throw corrupt(oid, "pack returned no content");
    const wrapped = wrapObject({ oid, type: result.type as ObjectType, content });
    return unwrapObject(oid, wrapped);
  }

  async function read(oid: Oid): Promise<GitObject> {
    if (!/^[0-9a-f]{40}$/.test(oid)) throw corrupt(String(oid), "not a 40-hex object id");
    const raw = await fs.readFileOrNull(loosePath(oid));
    if (raw === null) return readPacked(oid);
    let inflated: Buffer;
    try {
      inflated = inflateSync(raw);
    } catch (error) {
      throw corrupt(oid, "loose object does not inflate (torn write?)", error);
    }
    return unwrapObject(oid, inflated);
  }

  async function readTyped(oid: Oid, type: ObjectType): Promise<GitObject> {
    const object = await read(oid);
    if (object.type !== type) throw corrupt(oid, `is a ${object.type}, expected a ${type}`);
    return object;
  }

  async function writeOne(object: GitObject, touched: Set<string>): Promise<void> {
    const dir = `${objectsDir}/${object.oid.slice(0, 2)}`;
    const target = loosePath(object.oid);
    // Only blobs are looked up first: the same bytes are often written again, while a commit
    // (parent + time) or a tree on a changed path is new almost always. Rewriting an object
    // that exists is harmless (same bytes, atomic rename), just slower than one stat.
    if (object.type === "blob" && (await fs.statOrNull(target)) !== null) return;
    if (!knownDirs.has(dir)) {
      await fs.mkdirp(dir);
      knownDirs.add(dir);
    }
    // git's own temp name pattern, so `git gc` / `git prune` clean up after a crash.
    const temp = `${objectsDir}/tmp_obj_${tempPrefix}${(tempCounter++).toString(36)}`;
    try {
      await fs.writeNewFile(temp, deflateSync(wrapObject(object), { level: compressionLevel(object) }), durable);
      // Renaming over an identical object written concurrently is harmless: same bytes.
      try {
        await fs.rename(temp, target);
      } catch (error) {
        // `git gc` (prune-packed) removes emptied fan-out folders, so a remembered one may be gone.
        if (errnoCode(error) !== "ENOENT") throw error;
        await fs.mkdirp(dir);
        await fs.rename(temp, target);
      }
    } catch (error) {
      await fs.unlinkQuiet(temp);
      throw error;
    }
    touched.add(dir);
  }

  return {
    read,
    async readTree(oid) {
      const key = `${repoKey}\0${oid}`;
      const hit = caches.trees.get(key);
      if (hit !== undefined) return hit;
      const object = await readTyped(oid, "tree");
      const tree = decodeTree(oid, object.content);
      caches.trees.set(key, tree, tree.entries.length + 1);
      return tree;
    },
    async readCommit(oid) {
      const key = `${repoKey}\0${oid}`;
      const hit = caches.commits.get(key);
      if (hit !== undefined) return hit;
      const commit = decodeCommit(oid, (await readTyped(oid, "commit")).content);
      caches.commits.set(key, commit);
      return commit;
    },
    async readBlob(oid) {
      const key = `${repoKey}\0${oid}`;
      const hit = caches.blobs.get(key);
      if (hit !== undefined) return hit.slice();
      const content = (await readTyped(oid, "blob")).content;
      const copy = new Uint8Array(content);
      if (copy.byteLength <= BLOB_CACHE_MAX_BYTES) caches.blobs.set(key, copy, copy.byteLength + 64);
      return copy.slice();
    },
    async writeObjects(objects) {
      const touched = new Set<string>();
      // A few writes in flight hide disk latency; unbounded fan-out would exhaust file handles
      // on a big commit (tens of thousands of objects).
      const writeAll = async (batch: readonly GitObject[]): Promise<void> => {
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < batch.length) await writeOne(batch[next++] as GitObject, touched);
        };
        await Promise.all(Array.from({ length: Math.min(WRITE_PARALLELISM, batch.length) }, worker));
      };
      // Commits go last, so an interrupted write never leaves a commit whose tree is missing.
      await writeAll(objects.filter((o) => o.type !== "commit"));
      await writeAll(objects.filter((o) => o.type === "commit"));
      if (durable) {
        // The renames are only durable once the folders holding the new names are flushed.
        await Promise.all([...touched].map((dir) => fs.fsyncDir(dir)));
      }
    },
    rememberTrees(trees) {
      for (const tree of trees) caches.trees.set(`${repoKey}\0${tree.oid}`, tree, tree.entries.length + 1);
    },
  };
}
