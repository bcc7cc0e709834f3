/**
 * An in-memory node:fs for unit tests (memfs), one per test.
 */
import { createFsFromVolume, Volume } from "memfs";

export type MemFs = ReturnType<typeof createFsFromVolume>;

/** A fresh, empty in-memory file system. */
export function createMemFs(): MemFs {
  return createFsFromVolume(new Volume());
}
