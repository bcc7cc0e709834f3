/**
 * Derived files: data kept beside a repository, never in its history, that can always be
 * rebuilt from committed trees (an index keyed by tree oids, say). They live in
 * `<gitdir>/workflow-host/<name>`, a folder git ignores (`git fsck`, `clone` and `gc` never
 * look at it).
 *
 * Writes are atomic (temp file, then rename) and carry a SHA-1 of their content, so a reader
 * sees a whole file or none, and a file torn by a crash (rename without fsync) reads as absent.
 * Concurrent writers: the last rename wins; each file is whole.
 */
import { createHash, randomBytes } from "node:crypto";
import { WorkflowHostError, describeValue } from "../errors.js";
import type { FsAdapter } from "./fs-adapter.js";

/** Folder under a bare repository holding its derived files. */
export const DERIVED_DIR_NAME = "workflow-host";

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAGIC = "workflow-host derived file v1 sha1=";

/** @throws `path_violation` unless `name` is one file name (letters, digits, `.`, `_`, `-`). */
export function assertDerivedName(name: string): void {
  if (typeof name !== "string" || !NAME_PATTERN.test(name)) {
    throw new WorkflowHostError(
      "path_violation",
      `derived file name ${describeValue(name)} must be 1–128 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      { name },
    );
  }
}

/**
 * Largest derived file read, in bytes (1 GiB; the recovery index of 1,000,000 runs is a few
 * hundred MB). A bigger file is not ours: it reads as absent and is derived again.
 */
export const MAX_DERIVED_FILE_BYTES = 1024 * 1024 * 1024;

/**
 * The content of a derived file, or null when it is absent, torn, not one of ours, or not a
 * regular file of at most `maxBytes` (default {@link MAX_DERIVED_FILE_BYTES}); a link at its
 * place is not followed when `fs` is a store's (see contained-fs.ts) and reads as absent. The path is opened
 * without blocking and looked at through the descriptor before anything is read: opening a FIFO
 * would wait for a writer forever, and a device such as `/dev/zero` would be read until memory
 * runs out.
 */
export async function readDerivedFile(fs: FsAdapter, gitdir: string, name: string, opts: { readonly maxBytes?: number } = {}): Promise<Uint8Array | null> {
  const path = `${gitdir}/${DERIVED_DIR_NAME}/${name}`;
  const maxBytes = opts.maxBytes ?? MAX_DERIVED_FILE_BYTES;
  // Opened without blocking and looked at through its descriptor (see FsAdapter.readBoundedOrNull).
  let read: Awaited<ReturnType<FsAdapter["readBoundedOrNull"]>>;
  try {
    read = await fs.readBoundedOrNull(path, maxBytes);
  } catch (error) {
    // A link at the file's place (which a store's adapter never follows) is not one of ours
    // either: absent, derived again, and replaced by the next write's rename.
    if (error instanceof WorkflowHostError && error.code === "path_escapes_data_dir" && error.data["found"] === "link") return null;
    throw error;
  }
  if (read === null || "refused" in read || read.bytes.byteLength > maxBytes) return null;
  const bytes = read.bytes;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const newline = buf.indexOf(0x0a);
  if (newline < 0) return null;
  const header = buf.toString("latin1", 0, newline);
  if (!header.startsWith(MAGIC)) return null;
  const content = buf.subarray(newline + 1);
  const sum = createHash("sha1").update(content).digest("hex");
  return header.slice(MAGIC.length) === sum ? content : null;
}

/**
 * Replaces a derived file atomically; flushed first when `durable`. A directory found at the
 * path (a rename cannot replace one) is moved aside first, to `.displaced-<name>-<hex>` in the
 * same folder, with what it holds: the file is derived data and is written all the same, and
 * nothing a person put there is deleted.
 * @returns the path a directory in the way was moved to, or null (nothing was in the way)
 */
export async function writeDerivedFile(fs: FsAdapter, gitdir: string, name: string, content: Uint8Array, durable: boolean): Promise<string | null> {
  const dir = `${gitdir}/${DERIVED_DIR_NAME}`;
  await fs.mkdirp(dir);
  const sum = createHash("sha1").update(content).digest("hex");
  const temp = `${dir}/.tmp-${randomBytes(6).toString("hex")}`;
  const path = `${dir}/${name}`;
  let displaced: string | null = null;
  try {
    await fs.writeNewFile(temp, Buffer.concat([Buffer.from(`${MAGIC}${sum}\n`, "latin1"), content]), durable);
    const there = await fs.statOrNull(path);
    if (there?.isDirectory() === true) {
      displaced = `${dir}/.displaced-${name}-${randomBytes(6).toString("hex")}`;
      await fs.rename(path, displaced);
    }
    await fs.rename(temp, path);
  } catch (error) {
    await fs.unlinkQuiet(temp);
    throw error;
  }
  if (durable) await fs.fsyncDir(dir);
  return displaced;
}
