/**
 * Repository path rules. Every path a caller hands the store is checked here before any fs or
 * git call, so a path can never name something outside the tree it is written into, and every
 * tree the store writes passes `git fsck --strict` (which refuses `.`, `..`, empty names and
 * names that some file systems treat as `.git`).
 */
import { WorkflowHostError, describeValue } from "../errors.js";

// Code points HFS+ ignores when comparing names; git's fsck (is_hfs_dotgit) strips them too,
// so ".g\u200cit" is ".git" to a Mac checkout.
const HFS_IGNORABLE = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

const PLAIN_ASCII = /^[\x20-\x7e]*$/;
const GIT_LETTERS = /git/i;

function violation(path: string, reason: string): WorkflowHostError {
  return new WorkflowHostError(
    "path_violation",
    `repository path ${describeValue(path)} is not allowed: ${reason}; use "/"-separated names without empty, ".", ".." or ".git" segments`,
    { path, reason },
  );
}

/** True when `segment` means ".git" to git itself or to an NTFS/HFS+ checkout. */
function isDotGitLike(segment: string): boolean {
  // Plain ASCII without "git" in any case can fold to neither (most names: run ids, `3.json`).
  if (PLAIN_ASCII.test(segment) && !GIT_LETTERS.test(segment)) return false;
  const folded = segment.replace(HFS_IGNORABLE, "").toLowerCase();
  // NTFS drops trailing dots and spaces, and "git~1" is the 8.3 short name of ".git".
  const trimmed = folded.replace(/[. ]+$/, "");
  return trimmed === ".git" || trimmed === "git~1";
}

/**
 * True for a tree entry name `git fsck` refuses (and `receive.fsckObjects` rejects on push):
 * empty, `.`, `..`, `.git` or a name an NTFS/HFS+ checkout reads as `.git`, or one holding "/"
 * or a NUL. Only a tree built by hand can hold one; the store never writes such a name.
 */
export function isRefusedEntryName(name: string): boolean {
  return name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0") || isDotGitLike(name);
}

function checkSegment(path: string, segment: string): void {
  if (segment === "") throw violation(path, "empty segment (leading, trailing or doubled \"/\")");
  if (segment === "." || segment === "..") throw violation(path, `segment ${describeValue(segment)}`);
  if (segment.includes("\\")) throw violation(path, "backslash");
  if (segment.includes("\0")) throw violation(path, "NUL character");
  if (isDotGitLike(segment)) throw violation(path, `segment ${describeValue(segment)} names .git`);
}

/**
 * Splits a blob or tree path ("runs/r1/events/3.json") into its segments.
 * @returns at least one segment.
 * @throws `path_violation` for an empty path, a leading or trailing "/", an empty, `.`, `..`
 *   or `.git`-like segment (case-insensitive, as git's fsck compares), a backslash or a NUL.
 */
export function parseRepoPath(path: string): string[] {
  if (typeof path !== "string" || path === "") throw violation(String(path), "empty path");
  const segments = path.split("/");
  for (const segment of segments) checkSegment(path, segment);
  return segments;
}

/**
 * Splits a folder path: "" (or "/") is the root ([]); one trailing "/" is allowed
 * ("runs/r1/events/" and "runs/r1/events" are the same folder).
 * @throws `path_violation` as {@link parseRepoPath}.
 */
export function parseFolderPath(path: string): string[] {
  if (typeof path !== "string") throw violation(String(path), "not a string");
  if (path === "" || path === "/") return [];
  const trimmed = path.endsWith("/") ? path.slice(0, -1) : path;
  if (trimmed === "") return [];
  const segments = trimmed.split("/");
  for (const segment of segments) checkSegment(path, segment);
  return segments;
}

/**
 * Checks one tree entry name (a path segment).
 * @throws `path_violation` as {@link parseRepoPath}, and for a name containing "/".
 */
export function assertEntryName(name: string, context: string): void {
  if (name.includes("/")) throw violation(context, `name ${describeValue(name)} contains "/"`);
  checkSegment(context, name);
}
