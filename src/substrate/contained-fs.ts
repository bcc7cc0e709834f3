/**
 * Keeps a store's reads and writes inside its data dir when the file system holds symbolic
 * links: {@link containFs} wraps the store's {@link FsAdapter}s so nothing below the data dir
 * is read, written, renamed or removed through a link that leads out of it.
 *
 * What is guaranteed, for every path strictly below the data dir that goes through the wrapped
 * adapters (every ref, lock, pack, loose object and derived file of every repository):
 * - Folders. Before the first use of a folder (the folder a file is in, or the folder listed,
 *   flushed or made), its real path must lie under the data dir's real path; else the call
 *   fails with `path_escapes_data_dir` (`data.path`: the folder relative to the data dir;
 *   `data.found`: where it leads) and touches nothing. A folder at or below a repository
 *   (`<prefix>/<id>.git`, see {@link ContainmentOptions}) must resolve inside that repository's
 *   own folder, which is no link itself: one deployment's link never leads into another's. The verdict is kept per folder for the
 *   life of the store, so later calls cost one `Set` lookup (no realpath per commit). A link
 *   that stays inside (its repository, for a repository's folder) is followed. The data dir itself may be a link: it is
 *   resolved once.
 * - Folders made by the store (`mkdirp`) are made one level at a time, each level checked
 *   before the next is made below it, so a missing `refs/heads/team/` under a linked
 *   `refs/heads` is never created outside.
 * - A link whose target does not exist (`deployments/<id>.git` → nowhere) is no missing folder:
 *   its use fails with `path_escapes_data_dir` (`data.found`: the link's text), so it is
 *   neither read as empty nor made (nothing is made through it).
 * - A folder found gone (making a name in it fails with ENOENT or ENOTDIR) loses its verdict
 *   and is checked again at its next use, so a folder removed and made again (by the store or
 *   anyone) is checked afresh.
 * - Files. The adapters are made with `noFollow` (O_NOFOLLOW): a link at the last part of a path
 *   is never opened or read, whatever it leads to; such a call fails with
 *   `path_escapes_data_dir` (`data.found: "link"`). New files are made with O_CREAT|O_EXCL
 *   (which does not follow a link either) and put in place by rename (which replaces a link,
 *   never writes through it).
 *
 * Not guaranteed: a folder that passed its check and is then replaced by a link while this
 * process keeps using it (that takes write access to the repository while the host runs). It
 * is caught at the next start, by `workflow-host check`, or once the store finds the folder
 * gone. Metadata calls (`statOrNull`) follow a link at the last part of a path: they read no
 * content.
 *
 * Concurrency: checks of one folder made at once share one realpath; verdicts are only ever
 * added after a check passed, removed after a miss.
 */
import { basename, dirname, relative, sep } from "node:path";
import { WorkflowHostError } from "../errors.js";
import { errnoCode, type FsAdapter } from "./fs-adapter.js";

/** The calls a containment needs of the raw module (node:fs and memfs have them). */
interface RealpathLike {
  readonly promises?: { realpath?(path: string): Promise<string> };
  readonly realpathSync?: ((path: string) => string) & { native?: (path: string) => string };
}

/** The folder checks shared by a store's adapters (see the module comment). */
export interface Containment {
  /** The data dir as given to the store (no trailing slash). */
  readonly dataDir: string;
  /**
   * Resolves once `folder` (a path strictly below the data dir, as the store spells it) is
   * known to lie inside the data dir, or is missing (nothing can be read or written there
   * then). Paths not strictly below the data dir resolve at once.
   * @throws path_escapes_data_dir when its real path lies outside
   */
  checkFolder(folder: string): Promise<void>;
  /** True when `folder` passed its check and has not been found gone since. */
  isVerified(folder: string): boolean;
  /** Drops `folder`'s verdict and those of the folders below it. */
  forget(folder: string): void;
  /**
   * Makes `folder` and any missing parents below the data dir, one level at a time, checking
   * each level before making the next.
   * @throws path_escapes_data_dir when a level leads outside
   */
  makeFolder(folder: string, mkdirp: (path: string) => Promise<void>): Promise<void>;
}

/**
 * `path_escapes_data_dir` for `path` (as the store spells it): `found` is where a folder leads
 * (its real path), or "link" for a link at a file's place.
 */
export function escapesDataDir(dataDir: string, path: string, found: string, cause?: unknown): WorkflowHostError {
  const rel = relative(dataDir, path) || ".";
  return new WorkflowHostError(
    "path_escapes_data_dir",
    found === "link"
      ? `${rel} (in data dir ${dataDir}) is a symbolic link where a file belongs, which is never followed; nothing was read or written through it; replace the link with the file itself`
      : `${rel} (in data dir ${dataDir}) leads to ${found}, outside the data dir; nothing was read or written there; replace the link with the folder itself`,
    { path: rel, dataDir, found },
    cause === undefined ? {} : { cause },
  );
}

/**
 * The module's realpath: the synchronous one where there is one (a check runs once per folder,
 * and a few µs on the event loop beat a round trip through the thread pool), else the promise one.
 */
function realpathOf(rawFs: unknown): (path: string) => Promise<string> {
  const m = rawFs as RealpathLike | undefined;
  const sync = m?.realpathSync?.native ?? m?.realpathSync;
  if (typeof sync === "function") {
    return async (path) => sync(path);
  }
  const promised = m?.promises?.realpath;
  if (typeof promised !== "function") throw new TypeError("createRepoStore: `fs` must have realpathSync or promises.realpath");
  return (path) => promised.call(m?.promises, path);
}

/** Options of {@link createContainment}. */
export interface ContainmentOptions {
  /**
   * The folders below the data dir that hold repositories (`<prefix>/<id>.git`; the kind
   * handlers' `directoryPrefix`es). A folder at or below such a repository must resolve inside
   * that repository's own folder, which must itself not be a link: one deployment's link never
   * leads its reads and writes into another's refs or objects, nor anywhere else in the data
   * dir. Default: none (only the data dir bounds).
   */
  readonly repoPrefixes?: readonly string[];
}

/**
 * The repository folder (`<dataDir>/<prefix>/<name>.git`) that `folder` is at or below, for a
 * `prefix` in `prefixes`; null for any other folder.
 */
function repoFolderOf(below: string, folder: string, prefixes: ReadonlySet<string>): { parent: string; name: string } | null {
  const parts = folder.slice(below.length).split("/");
  const [prefix, name] = parts;
  if (prefix === undefined || name === undefined || !prefixes.has(prefix) || !name.endsWith(".git") || name === ".git") return null;
  return { parent: `${below}${prefix}`, name };
}

/**
 * The folder checks of one data dir over `rawFs` (node:fs or a module like it).
 * @param options `repoPrefixes`: see {@link ContainmentOptions}
 * @throws TypeError when the module has neither `realpathSync` nor `promises.realpath`
 */
export function createContainment(dataDir: string, rawFs: unknown, options: ContainmentOptions = {}): Containment {
  const realpath = realpathOf(rawFs);
  const prefixes = new Set(options.repoPrefixes ?? []);
  const below = dataDir === "/" ? "/" : `${dataDir}/`;
  const verified = new Set<string>();
  const pending = new Map<string, Promise<void>>();
  let root: string | null = null;

  const isBelow = (path: string): boolean => path.length > below.length && path.startsWith(below);

  /** The data dir's real path, or null while it does not exist. */
  async function rootReal(): Promise<string | null> {
    if (root !== null) return root;
    try {
      root = await realpath(dataDir);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return null;
      throw error;
    }
    return root;
  }

  /** Checks `folder` now: true when inside, false when missing. */
  async function verify(folder: string): Promise<boolean> {
    const base = await rootReal();
    if (base === null) return false;
    let real: string;
    try {
      real = await realpath(folder);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") {
        // A link that leads nowhere (yet) is no missing folder: read, it would pass for empty;
        // made, the folder would fail (EEXIST) or, on some file systems, appear where it points.
        const target = linkTargetOf(rawFs, folder);
        if (target !== null) throw danglingLink(dataDir, folder, target);
        return false;
      }
      // A loop of links leads nowhere inside.
      if (code === "ELOOP") throw escapesDataDir(dataDir, folder, "a loop of links", error);
      throw error;
    }
    if (real !== base && !real.startsWith(base === sep ? base : `${base}${sep}`)) throw escapesDataDir(dataDir, folder, real);
    const repo = repoFolderOf(below, folder, prefixes);
    if (repo !== null) {
      // Its repository's folder as it is when not a link: the real path of the folder it is in, and its name.
      let home: string;
      try {
        home = `${await realpath(repo.parent)}${sep}${repo.name}`;
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") return false;
        throw error;
      }
      if (real !== home && !real.startsWith(`${home}${sep}`)) throw leavesRepository(dataDir, folder, `${repo.parent}/${repo.name}`, relative(base, real) || ".");
    }
    verified.add(folder);
    return true;
  }

  function checkFolder(folder: string): Promise<void> {
    if (!isBelow(folder) || verified.has(folder)) return Promise.resolve();
    let check = pending.get(folder);
    if (check === undefined) {
      check = verify(folder).then(
        () => {
          pending.delete(folder);
        },
        (error: unknown) => {
          pending.delete(folder);
          throw error;
        },
      );
      pending.set(folder, check);
    }
    return check;
  }

  return {
    dataDir,
    checkFolder,
    isVerified: (folder) => !isBelow(folder) || verified.has(folder),
    forget(folder) {
      if (!verified.delete(folder)) return;
      const inner = `${folder}/`;
      for (const known of verified) if (known.startsWith(inner)) verified.delete(known);
    },
    async makeFolder(folder, mkdirp) {
      if (!isBelow(folder)) {
        await mkdirp(folder);
        return;
      }
      if (verified.has(folder)) {
        await mkdirp(folder);
        return;
      }
      if ((await rootReal()) === null) {
        await mkdirp(dataDir);
        if ((await rootReal()) === null) throw goneAsMade(dataDir);
      }
      const levels = folder.slice(below.length).split("/");
      let at = below.slice(0, -1);
      for (const level of levels) {
        if (level === "") continue;
        at = at === "" ? `/${level}` : `${at}/${level}`;
        if (verified.has(at)) continue;
        await checkFolder(at);
        if (verified.has(at)) continue;
        // Missing: the level above is checked, so this one is made inside; then checked itself.
        await mkdirp(at);
        await checkFolder(at);
        if (!verified.has(at)) throw goneAsMade(at);
      }
    },
  };
}

/**
 * `path_escapes_data_dir` for a folder of repository `repo` that resolves inside the data dir
 * but outside that repository's own folder (`found`: where it leads, relative to the data dir).
 */
function leavesRepository(dataDir: string, folder: string, repo: string, found: string): WorkflowHostError {
  const rel = relative(dataDir, folder) || ".";
  const own = relative(dataDir, repo);
  return new WorkflowHostError(
    "path_escapes_data_dir",
    `${rel} (in data dir ${dataDir}) leads to ${found}, outside its own repository ${own}; a repository's folders never lead into another's or elsewhere; nothing was read or written there; replace the link with the folder itself`,
    { path: rel, dataDir, found, repository: own },
  );
}

/**
 * Where the link at `path` points, or null when `path` is no link (or is gone). Synchronous, so
 * a check that finds a folder missing takes no more turns than before it asked.
 */
function linkTargetOf(rawFs: unknown, path: string): string | null {
  const m = rawFs as { readlinkSync?: (path: string) => string | Buffer } | undefined;
  if (typeof m?.readlinkSync !== "function") return null;
  try {
    return String(m.readlinkSync(path));
  } catch {
    return null;
  }
}

/**
 * `path_escapes_data_dir` for a link standing where the store makes a folder, whose target does
 * not exist (`found`: the link's text): nothing is made through it.
 */
function danglingLink(dataDir: string, path: string, target: string): WorkflowHostError {
  const rel = relative(dataDir, path) || ".";
  return new WorkflowHostError(
    "path_escapes_data_dir",
    `${rel} (in data dir ${dataDir}) is a symbolic link to ${target}, which does not exist; the store makes its folders itself and never through a link; nothing was written; remove the link`,
    { path: rel, dataDir, found: target },
  );
}

/** A folder missing right after it was made (removed meanwhile): ENOENT, as node says it. */
function goneAsMade(path: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, mkdir '${path}' (removed as it was made)`), { code: "ENOENT", syscall: "mkdir", path });
}

/** The raw calls {@link findEscapingLinks} makes (node:fs and memfs have them). */
interface WalkFs {
  readonly promises: {
    readdir(path: string, opts: { withFileTypes: true }): Promise<Array<{ name: string | Buffer; isDirectory(): boolean; isSymbolicLink(): boolean }>>;
    realpath(path: string): Promise<string>;
    lstat(path: string): Promise<{ isSymbolicLink(): boolean }>;
  };
}

/**
 * Every symbolic link at or below `folder` that leads outside the data dir (or nowhere: a
 * loop, a missing target), as paths relative to the data dir, in walk order. Links are not
 * followed; what they lead to is not listed. For `workflow-host check`: the store itself only
 * meets the links on the paths it uses, when it uses them.
 * @param rawFs node:fs or a module like it (the store's `fs` option)
 * @param opts `repository`: `folder` is a repository's folder, whose links must stay inside
 *   it (see {@link ContainmentOptions}): `folder` itself is listed when it is a link at all, and
 *   a link below it when it leads outside it
 */
export async function findEscapingLinks(rawFs: unknown, dataDir: string, folder: string, opts: { readonly repository?: boolean } = {}): Promise<string[]> {
  const { promises: fsp } = rawFs as WalkFs;
  let root: string;
  try {
    root = opts.repository === true ? `${await fsp.realpath(dirname(folder))}${sep}${basename(folder)}` : await fsp.realpath(dataDir);
  } catch {
    return [];
  }
  const found: string[] = [];
  const inside = (real: string): boolean => real === root || real.startsWith(root === sep ? root : `${root}${sep}`);
  const visit = async (path: string): Promise<void> => {
    let entries: Awaited<ReturnType<WalkFs["promises"]["readdir"]>>;
    try {
      entries = await fsp.readdir(path, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const child = `${path}/${String(entry.name)}`;
      if (entry.isSymbolicLink()) await judge(child);
      else if (entry.isDirectory()) await visit(child);
    }
  };
  const judge = async (link: string): Promise<void> => {
    const real = await fsp.realpath(link).catch(() => null);
    if (real === null || !inside(real)) found.push(relative(dataDir, link));
  };
  const self = await fsp.lstat(folder).catch(() => null);
  if (self?.isSymbolicLink() === true) {
    await judge(folder);
    if (found.length > 0) return found;
  }
  await visit(folder);
  return found;
}

/** The errors that say a folder on the path is gone. */
const GONE = new Set(["ENOENT", "ENOTDIR"]);

/**
 * `inner` with every path below the data dir checked (see the module comment). `inner` must
 * have been made with `noFollow`, so that a link at a file's place fails with ELOOP, which
 * this turns into `path_escapes_data_dir`.
 */
export function containFs(inner: FsAdapter, containment: Containment): FsAdapter {
  const { dataDir } = containment;

  /**
   * A failure of a call on `path` in `folder`, as the store should see it. `creates`: the call
   * makes a name in `folder`, so ENOENT means the folder itself is gone (for a read it usually
   * means only the file is).
   */
  const explain = (error: unknown, path: string, folder: string, creates: boolean): unknown => {
    const code = errnoCode(error);
    if (code === "ELOOP") return escapesDataDir(dataDir, path, "link", error);
    if (creates && code !== undefined && GONE.has(code)) containment.forget(folder);
    return error;
  };

  /** Runs `call` once `folder` is checked: on the hot path (checked) with no extra turn. */
  const within = <T>(folder: string, path: string, call: () => Promise<T>, creates = false): Promise<T> => {
    const run = (): Promise<T> =>
      call().catch((error: unknown) => {
        throw explain(error, path, folder, creates);
      });
    return containment.isVerified(folder) ? run() : containment.checkFolder(folder).then(run);
  };

  /** As {@link within} for a file: its folder is checked. */
  const inFolderOf = <T>(path: string, call: () => Promise<T>, creates = false): Promise<T> => within(dirname(path), path, call, creates);

  return {
    raw: inner.raw,
    isNodeFs: inner.isNodeFs,
    readFileOrNull: (path) => inFolderOf(path, () => inner.readFileOrNull(path)),
    readBoundedOrNull: (path, maxBytes) => inFolderOf(path, () => inner.readBoundedOrNull(path, maxBytes)),
    readFile: (path) => inFolderOf(path, () => inner.readFile(path)),
    writeNewFile: (path, data, sync) => inFolderOf(path, () => inner.writeNewFile(path, data, sync), true),
    open: (path, flags) => inFolderOf(path, () => inner.open(path, flags), flags.startsWith("w")),
    rename: (from, to) => {
      const fromFolder = dirname(from);
      const toFolder = dirname(to);
      const move = (): Promise<void> => within(toFolder, to, () => inner.rename(from, to), true);
      return fromFolder === toFolder || containment.isVerified(fromFolder) ? move() : containment.checkFolder(fromFolder).then(move);
    },
    unlinkQuiet: (path) => inFolderOf(path, () => inner.unlinkQuiet(path)),
    mkdirp: (path) =>
      containment.makeFolder(path, (folder) => inner.mkdirp(folder)).catch((error: unknown) => {
        throw explain(error, path, path, true);
      }),
    statOrNull: (path) => inFolderOf(path, () => inner.statOrNull(path)),
    readdirOrEmpty: (path) => within(path, path, () => inner.readdirOrEmpty(path)),
    fsyncDir: (path) => within(path, path, () => inner.fsyncDir(path)),
    readRange: (path, position, length) => inFolderOf(path, () => inner.readRange(path, position, length)),
    checkFolder: (path) => containment.checkFolder(path),
  };
}
