/**
 * Reads of new commits in one memory store, each holding given files in a repo of its own; the
 * store is closed after each test.
 */
import { afterEach } from "vitest";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import type { CommittedReads } from "../../src/substrate/types.js";
import { buildFixtureRepo, type FixtureFiles } from "../../src/testing/fixture-repo.js";
import { createMemoryRepoStore, type MemoryRepoStore } from "../../src/testing/memory-store.js";
import { WORKFLOW_RUN_KIND } from "../../src/workflow/workflow-run-kind.js";

/** Registers the store's closing with `afterEach` and returns `commitOf(files)`. */
export function memoryCommits(): (files: FixtureFiles) => Promise<CommittedReads> {
  let opened: MemoryRepoStore | null = null;
  let repos = 0;
  afterEach(async () => {
    await opened?.store.close();
    opened = null;
  });
  return async (files) => {
    opened ??= createMemoryRepoStore();
    repos += 1;
    const id = `dep${repos}`;
    await buildFixtureRepo(opened.store, id, files);
    return opened.store.openCommittedReads(null, { kind: WORKFLOW_RUN_KIND, id }, DEFAULT_REF);
  };
}
