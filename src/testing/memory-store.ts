/**
 * A repo store over an in-memory file system (memfs), set up for deployment repos: the
 * workflow-run kind handler (with `validatePush`) and `allowAll`. For unit tests of code that
 * embeds the host: nothing touches the disk, every store is independent.
 */
import type * as Memfs from "memfs";
import { WorkflowHostError } from "../errors.js";
import { allowAll } from "../substrate/allow-all.js";
import { createRepoStore } from "../substrate/repo-store.js";
import type { RepoStore, RepoStoreOptions } from "../substrate/types.js";
import { workflowRunKind } from "../workflow/workflow-run-kind.js";

/**
 * memfs is an optional peer dependency, installed by the projects that use this test kit: when it
 * is missing, importing `workflow-host/testing` fails with `config_invalid` saying how to install
 * it, instead of node's bare ERR_MODULE_NOT_FOUND from a file deep in dist/.
 */
async function loadMemfs(): Promise<typeof Memfs> {
  try {
    return await import("memfs");
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== "ERR_MODULE_NOT_FOUND" || !String((error as Error).message).includes("'memfs'")) throw error;
    throw new WorkflowHostError(
      "config_invalid",
      "workflow-host/testing needs memfs, an optional peer dependency that is not installed; install it beside workflow-host: npm i -D memfs",
      { dependency: "memfs" },
      { cause: error },
    );
  }
}

const { createFsFromVolume, Volume } = await loadMemfs();

/** The memfs file system a memory store lives on (node:fs compatible). */
export type MemoryFs = ReturnType<typeof Memfs.createFsFromVolume>;

/** Options of {@link createMemoryRepoStore}; every store option but `fs` may be given. */
export interface MemoryRepoStoreOptions extends Partial<Omit<RepoStoreOptions, "fs">> {
  /**
   * Reuse this memfs instead of a fresh one: a second store over the same repos, the way a
   * restarted process or another process opens them. Default: a new, empty memfs.
   */
  readonly fs?: MemoryFs;
  /** Largest event the workflow-run kind accepts (bytes, default 1 MiB); ignored with `kindHandlers`. */
  readonly maxEventBytes?: number;
}

/** What {@link createMemoryRepoStore} returns. */
export interface MemoryRepoStore {
  readonly store: RepoStore;
  /** The memfs holding the repos, for out-of-band reads and writes in tests. */
  readonly fs: MemoryFs;
  /** Root of the store on `fs`; repos live at `<dataDir>/deployments/<repoId>.git`. */
  readonly dataDir: string;
}

// Lets `buildFixtureRepo` open a second, unvalidated store over the same memfs without the
// caller handing the fs around.
const memoryFsOf = new WeakMap<RepoStore, MemoryFs>();

/**
 * Opens a repo store on memfs.
 *
 * Defaults: `dataDir` "/data", `kindHandlers` [`workflowRunKind({maxEventBytes})`],
 * `authorize` `allowAll`, `watch` false (memfs has no OS events; commits made through this
 * store still reach its subscribers at once, and `store.poke()` re-checks refs written
 * around it). Every other option is passed to `createRepoStore` as given (`clock` for stable
 * commit ids, `timers` for lock and retry back-off).
 * @returns the store, its memfs and its data dir; close the store with `store.close()`
 * @throws TypeError for a bad store option (as `createRepoStore`)
 */
export function createMemoryRepoStore(opts: MemoryRepoStoreOptions = {}): MemoryRepoStore {
  const { fs: given, maxEventBytes, ...storeOptions } = opts;
  const fs = given ?? createFsFromVolume(new Volume());
  const dataDir = storeOptions.dataDir ?? "/data";
  const store = createRepoStore({
    kindHandlers: [workflowRunKind(maxEventBytes === undefined ? {} : { maxEventBytes })],
    authorize: allowAll,
    watch: false,
    ...storeOptions,
    dataDir,
    fs,
  });
  memoryFsOf.set(store, fs);
  return { store, fs, dataDir };
}

/** The memfs of a store made by {@link createMemoryRepoStore}, or undefined for any other store. */
export function memoryFsOfStore(store: RepoStore): MemoryFs | undefined {
  return memoryFsOf.get(store);
}
