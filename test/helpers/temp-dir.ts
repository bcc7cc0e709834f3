/**
 * Fresh temporary folders on real disk, one per test, removed after the test.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";

/** Creates a new empty folder under the OS temp dir; the caller removes it. */
export async function makeTempDir(prefix = "workflow-host-"): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

/** Removes a folder tree; a missing folder is fine. */
export async function removeTempDir(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
}

/**
 * Registers an `afterEach` that removes every folder handed out by the returned function, so
 * each test gets its own folder and nothing leaks between tests. Call at module or describe level.
 */
export function useTempDirs(prefix?: string): () => Promise<string> {
  const made: string[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((dir) => removeTempDir(dir)));
  });
  return async () => {
    const dir = await makeTempDir(prefix);
    made.push(dir);
    return dir;
  };
}
