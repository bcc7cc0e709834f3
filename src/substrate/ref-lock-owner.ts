/** Who holds a ref lock, and where that is recorded beside the repository. */
import { DERIVED_DIR_NAME } from "./derived-files.js";

/** Who takes ref locks, and how to tell whether another process of this machine still runs. */
export interface LockHolder {
  readonly pid: number;
  readonly hostname: string;
  /** Whether process `pid` of this machine exists. */
  isAlive(pid: number): boolean;
}

/**
 * Where the holder of `<ref>.lock` is recorded: `<gitdir>/workflow-host/ref-locks/<ref>.owner`,
 * a folder git ignores (a file beside the lock under `refs/` would be read by git as a ref).
 * While a lock is held it says `held <inode> <birth mtime ms> <pid> <hostname>` of that lock,
 * and `released` once it is renamed or removed; a record whose inode and birth time do not match
 * the lock on disk describes another lock and says nothing.
 */
export function lockOwnerPath(gitdir: string, refName: string): string {
  return `${gitdir}/${DERIVED_DIR_NAME}/ref-locks/${refName}.owner`;
}
