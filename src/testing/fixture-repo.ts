/**
 * Builds a deployment repo from a fixture folder: plain files on disk, laid out as the repo's
 * tree (`runs/<runId>/events/<seq>.json`), committed in one commit.
 *
 * Fixtures may hold invalid events on purpose (a malformed file, a seq that does not match its
 * name), which the workflow-run kind's `validatePush` would refuse. So by default the files are
 * committed through a second, unvalidated store opened over the same data dir and fs: the
 * store-level equivalent of a `git push` of untrusted content, which never passes
 * `validatePush` either. `{validate: true}` commits through the given store instead, so a
 * fixture can also be checked to be a valid log.
 */
import type { Clock } from "../time/clock.js";
import { DEFAULT_REF } from "../substrate/ref-name.js";
import { readdir, readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { WorkflowHostError } from "../errors.js";
import { allowAll } from "../substrate/allow-all.js";
import { createRepoStore } from "../substrate/repo-store.js";
import type { Principal, RepoId, RepoStore } from "../substrate/types.js";
import { parseRepoId } from "../workflow/ids.js";
import { parseInstant } from "../workflow/time.js";
import { WORKFLOW_RUN_DIRECTORY_PREFIX, WORKFLOW_RUN_KIND } from "../workflow/workflow-run-kind.js";
import { memoryFsOfStore } from "./memory-store.js";

/** The fixture's description file at the top of a fixture folder; never committed. */
export const FIXTURE_MANIFEST = "fixture.json";

/**
 * A fixture given inline: repo path (`runs/<runId>/events/<seq>.json`) → the file's content.
 * A string or bytes is committed as given; any other value is committed as its JSON text, so
 * `{"runs/r1/events/1.json": {seq: 1, type: "TimerSet", data: {…}}}` is one event file.
 */
export type FixtureFiles = Readonly<Record<string, string | Uint8Array | object>>;

/** Commit time of a raw fixture commit when the manifest names no `now`. */
const DEFAULT_COMMIT_TIME = "2026-01-01T00:00:00.000Z";

export interface BuildFixtureRepoOptions {
  /** Passed to the store's `authorize`. Default null. */
  readonly principal?: Principal;
  /** Ref to commit to. Default `DEFAULT_REF` ("refs/heads/main"). */
  readonly ref?: string;
  /** Commit message. Default `Fixture <folder name>`. */
  readonly message?: string;
  /**
   * true: commit through `store`, so its kind handler validates every event (a fixture with a
   * bad event is refused, `event_invalid` and friends). Default false: commit unvalidated.
   */
  readonly validate?: boolean;
  /**
   * node:fs-compatible module `store` was opened with, for the unvalidated commit. Default: the
   * memfs of a store made by `createMemoryRepoStore`, else node:fs. A wrong fs finds no repo
   * there and fails with `repo_not_found` rather than writing elsewhere.
   */
  readonly fs?: unknown;
  /**
   * Commit time of the unvalidated commit. Default: the manifest's `now`, else
   * 2026-01-01T00:00:00Z, so a fixture always gives the same commit id. A validated commit
   * takes its time from `store`'s own clock.
   */
  readonly clock?: Clock;
}

/**
 * Reads every file of a fixture folder (from node:fs, whatever fs the store uses), except the
 * manifest `fixture.json` at its top.
 * @param folder path of the fixture folder on disk
 * @returns repo path (`/`-separated, relative to `folder`) → exact bytes, sorted by path
 * @throws `path_violation` for an entry that is neither a file nor a folder (a symlink);
 *   node's errors for a missing or unreadable folder
 */
export async function readFixtureFolder(folder: string): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) await walk(join(dir, entry.name), `${path}/`);
      else if (entry.isFile()) {
        if (path !== FIXTURE_MANIFEST) files.set(path, new Uint8Array(await readFile(join(dir, entry.name))));
      } else {
        throw new WorkflowHostError("path_violation", `fixture entry ${JSON.stringify(path)} is not a file or folder; allowed: plain files and folders`, { folder, path });
      }
    }
  };
  await walk(folder, "");
  return files;
}

/**
 * Creates (if needed) the deployment repo `repoId` and commits every file of a fixture folder
 * into it in one commit (additive: files already in the repo and not in the fixture are kept).
 *
 * The repo is created through `store` (`authorize` sees an "init"). The unvalidated commit is
 * made by a short-lived store with `allowAll` over `store.dataDir` and the same fs, then
 * `store.poke(repoId)` tells `store`'s watchers to look, as after a `git push`.
 *
 * @param store a store with the workflow-run kind (repos under `<dataDir>/deployments/`)
 * @param repoId deployment id, `^[A-Za-z0-9_-]{1,128}$`
 * @param folder path of the fixture folder on disk, or the fixture's files inline
 *   ({@link FixtureFiles}; commit time 2026-01-01T00:00:00Z unless `clock` is given)
 * @returns the sha of the commit the ref points to afterwards (the tip, unchanged when the repo
 *   already held exactly these files)
 * @throws `repo_id_invalid` before any fs call; `time_invalid` for a bad manifest `now`;
 *   `path_violation` for a symlink in the folder; with `validate`, the kind handler's codes;
 *   the store's errors (`authorize_denied`, `repo_not_found` for a wrong `fs`, `ref_locked`)
 */
export async function buildFixtureRepo(store: RepoStore, repoId: string, folder: string | FixtureFiles, opts: BuildFixtureRepoOptions = {}): Promise<string> {
  const id = parseRepoId(repoId);
  const rid: RepoId = { kind: WORKFLOW_RUN_KIND, id };
  const principal = opts.principal ?? null;
  const ref = opts.ref ?? DEFAULT_REF;
  const message = opts.message ?? (typeof folder === "string" ? `Fixture ${basename(folder)}` : "Fixture");
  const files = typeof folder === "string" ? await readFixtureFolder(folder) : inlineFixtureFiles(folder);
  await store.initRepo(principal, rid);
  if (opts.validate === true) {
    const result = await store.writeTree(principal, rid, ref, { files, message });
    return result.commitSha as string;
  }
  const commitTime = opts.clock === undefined ? new Date(typeof folder === "string" ? await manifestNow(folder) : DEFAULT_COMMIT_TIME) : undefined;
  const raw = createRepoStore({
    dataDir: store.dataDir,
    fs: opts.fs ?? memoryFsOfStore(store),
    kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: WORKFLOW_RUN_DIRECTORY_PREFIX }],
    authorize: allowAll,
    clock: opts.clock ?? (() => new Date((commitTime as Date).getTime())),
    watch: false,
  });
  try {
    const result = await raw.writeTree(principal, rid, ref, { files, message });
    return result.commitSha as string;
  } finally {
    await raw.close();
    store.poke(rid);
  }
}

/** Inline fixture files as exact bytes, sorted by path like a folder's. */
function inlineFixtureFiles(given: FixtureFiles): Map<string, Uint8Array> {
  const encoder = new TextEncoder();
  const files = new Map<string, Uint8Array>();
  for (const path of Object.keys(given).sort()) {
    const value = given[path] as string | Uint8Array | object;
    files.set(path, value instanceof Uint8Array ? value : encoder.encode(typeof value === "string" ? value : JSON.stringify(value)));
  }
  return files;
}

/** The manifest's `now`, normalised, or the default commit time when there is none. */
async function manifestNow(folder: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(join(folder, FIXTURE_MANIFEST), "utf8");
  } catch (error) {
    if ((error as { code?: unknown }).code === "ENOENT") return DEFAULT_COMMIT_TIME;
    throw error;
  }
  const now = (JSON.parse(text) as { now?: unknown }).now;
  return now === undefined ? DEFAULT_COMMIT_TIME : parseInstant(now, `${FIXTURE_MANIFEST} now`);
}
