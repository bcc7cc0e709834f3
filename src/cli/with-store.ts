/**
 * Opens a store for one CLI command and closes it afterwards. Commands other than `serve` and
 * `demo` take no host lock: their writes go through the store's ref lock, so they are safe next
 * to a running host, which sees them through its watcher.
 */
import { mkdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { isWorkflowHostError, WorkflowHostError } from "../errors.js";
import type { RepoStore } from "../substrate/types.js";
import { shellQuote } from "./commands/paths.js";
import type { CliIo } from "./io.js";

/**
 * Throws `data_dir_not_found` unless `dataDir` is an existing folder, so a mistyped path is
 * not read as "no deployments" (or, for `serve`, turned into a new empty data dir); throws
 * `io_failed` when its `deployments` is a file (see {@link refuseDeploymentsFile}).
 * @param hint what to run instead, e.g. "workflow-host serve --data-dir DIR --init"
 */
export async function requireDataDir(dataDir: string, hint: string): Promise<void> {
  const found = await stat(dataDir).catch(() => null);
  if (found === null) {
    await refuseFileAncestor(dataDir);
    throw new WorkflowHostError("data_dir_not_found", `data dir ${dataDir} does not exist; check the path, or create it with ${hint}`, { dataDir });
  }
  refuseNonFolder(dataDir, found.isDirectory());
  await refuseDeploymentsFile(dataDir);
}

/**
 * Throws `io_failed` (`data.errno` "ENOTDIR", `data.cause` "not_a_folder") when
 * `<dataDir>/deployments` exists and is no folder (a file, a device): every deployment would
 * otherwise read as missing, and a host would serve none without a word. A link is followed,
 * as the store follows it (the store refuses one that leads out of the data dir).
 */
export async function refuseDeploymentsFile(dataDir: string): Promise<void> {
  const path = join(dataDir, "deployments");
  const found = await stat(path).catch(() => null);
  if (found === null || found.isDirectory()) return;
  throw new WorkflowHostError(
    "io_failed",
    `data dir ${dataDir} cannot be read: ENOTDIR on ${path}: it is a file, not a folder; move it away (deployments live in ${path}/<id>.git)`,
    { errno: "ENOTDIR", cause: "not_a_folder", path, dataDir },
  );
}

/**
 * Throws `data_dir_not_found` naming the file when a folder above the missing `dataDir` is a
 * file (or anything but a folder): the data dir can never be created there (ENOTDIR), which is
 * a wrong path, not a full or failing file system.
 */
export async function refuseFileAncestor(dataDir: string): Promise<void> {
  // From the path itself ("file/" fails with ENOTDIR too) up to the root.
  for (let path = resolve(dataDir); ; path = dirname(path)) {
    const found = await stat(path).catch(() => null);
    if (found !== null) {
      if (found.isDirectory()) return;
      throw new WorkflowHostError("data_dir_not_found", `data dir ${dataDir} cannot be created: ${path} is a file, not a folder; check the path`, { dataDir, path });
    }
    if (dirname(path) === path) return;
  }
}

/**
 * Makes the data dir for the commands that create it (`repo create`, `serve --init`): throws
 * `data_dir_not_found` when something other than a folder (a file, a device) is at `dataDir`
 * or above it (see {@link refuseFileAncestor}), so the user reads "is a file" rather than a
 * file-system error; else makes each missing level, one `mkdir` at a time. (node's recursive
 * mkdir never returns where a folder refuses new entries with ENOENT, as /proc does; one
 * level at a time, that is an error: io_failed.)
 * @throws data_dir_not_found; io_failed for a `deployments` that is a file; the file system's error
 *   (EACCES, ENOENT, EROFS, …) otherwise
 */
export async function makeDataDir(dataDir: string): Promise<void> {
  const found = await stat(dataDir).catch(() => null);
  if (found !== null) {
    refuseNonFolder(dataDir, found.isDirectory());
    await refuseDeploymentsFile(dataDir);
    return;
  }
  await refuseFileAncestor(dataDir);
  const missing: string[] = [];
  for (let path = resolve(dataDir); (await stat(path).catch(() => null)) === null && dirname(path) !== path; path = dirname(path)) missing.unshift(path);
  for (const path of missing) {
    await mkdir(path).catch((error: NodeJS.ErrnoException) => {
      // Made meanwhile by someone else: as good.
      if (error.code !== "EEXIST") throw error;
    });
  }
}

function refuseNonFolder(dataDir: string, isFolder: boolean): void {
  if (!isFolder) {
    throw new WorkflowHostError("data_dir_not_found", `data dir ${dataDir} is a file, not a folder; check the path`, { dataDir });
  }
}

/**
 * Runs `work` with a store over `dataDir` (no watching: a command reads or writes and exits).
 * A `repo_not_found` from the store is re-worded to name the command that creates the
 * deployment.
 * @param opts.create - make the data dir when missing (default false: a missing data dir is
 *   `data_dir_not_found`); a file at `dataDir` is `data_dir_not_found` either way
 * @returns what `work` returns; the store is closed either way
 */
export async function withStore<T>(dataDir: string, io: CliIo, work: (store: RepoStore) => Promise<T>, opts: { create?: boolean } = {}): Promise<T> {
  if (opts.create !== true) await requireDataDir(dataDir, `workflow-host repo create --data-dir ${shellQuote(dataDir)} --repo <id>`);
  else await makeDataDir(dataDir);
  // Loaded here, not at start-up: the store pulls in git and the event schemas.
  const { openWorkflowStore } = await import("../host/open-workflow-store.js");
  const store = openWorkflowStore({ dataDir, watch: false, clock: io.clock });
  try {
    return await work(store);
  } catch (error) {
    throw cliError(error, dataDir);
  } finally {
    await store.close();
  }
}

/** A store error re-worded for a CLI user: what to run, not which function to call. */
function cliError(error: unknown, dataDir: string): unknown {
  if (!isWorkflowHostError(error, "repo_not_found")) return error;
  const raw = error.data["repoId"];
  const repoId = typeof raw === "string" ? raw : typeof raw === "object" && raw !== null && typeof (raw as { id?: unknown }).id === "string" ? (raw as { id: string }).id : "<id>";
  return new WorkflowHostError(
    "repo_not_found",
    `deployment ${repoId} does not exist in ${dataDir}; create it with workflow-host repo create --data-dir ${shellQuote(dataDir)} --repo ${repoId} (workflow-host repo list shows what exists)`,
    { ...error.data, dataDir },
    { cause: error },
  );
}
