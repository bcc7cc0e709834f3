/**
 * The files that make a folder a bare git repository. Creation is idempotent and safe when
 * several processes race: every file is written to a temp name and renamed into place, folders
 * are created recursively, and HEAD comes last because git (and the store) treat a folder with
 * HEAD as a repository.
 */
import { randomBytes } from "node:crypto";
import { WorkflowHostError } from "../errors.js";
import type { FsAdapter } from "./fs-adapter.js";

// receive.fsckObjects: git itself refuses a push whose objects `git fsck` would (a tree entry
// named `..` or `.git`, a malformed commit), so such history never enters the repository.
const CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n[receive]\n\tfsckObjects = true\n";
const HEAD = "ref: refs/heads/main\n";

async function writeIfAbsent(fs: FsAdapter, path: string, text: string, durable: boolean): Promise<void> {
  if ((await fs.statOrNull(path)) !== null) return;
  const temp = `${path}.tmp-${randomBytes(6).toString("hex")}`;
  const handle = await fs.open(temp, "wx");
  try {
    await handle.write(Buffer.from(text, "utf8"));
    if (durable) await handle.sync();
  } finally {
    await handle.close();
  }
  // A racing process writes the same bytes, so whichever rename lands last changes nothing.
  await fs.rename(temp, path);
}

/** True when `gitdir` holds a HEAD file, i.e. the layout was completed. */
export async function repoLayoutExists(fs: FsAdapter, gitdir: string): Promise<boolean> {
  return (await fs.statOrNull(`${gitdir}/HEAD`)) !== null;
}

/** What a layout this module began and did not finish may hold (a creation cut short before HEAD). */
const OWN_PARTIAL_ENTRY = /^(?:objects|refs|config|(?:config|HEAD)\.tmp-[0-9a-f]{12})$/;

/**
 * Creates the bare-repository layout at `gitdir` where missing: `config` (bare, format 0,
 * `receive.fsckObjects`),
 * `objects/` (with `info/` and `pack/`), `refs/heads/`, `refs/tags/`, then HEAD
 * (`ref: refs/heads/main`). Existing files are left alone. `gitdir` must be absent, an empty
 * folder, or a layout of ours (with HEAD, or one cut short before it): git is never set up
 * inside someone else's files.
 * @returns true when HEAD had to be created.
 * @throws `path_violation` (data `{gitdir, found}`) for a file there, or a folder holding
 *   anything else, before anything is written
 */
export async function ensureRepoLayout(fs: FsAdapter, gitdir: string, durable: boolean): Promise<boolean> {
  if (await repoLayoutExists(fs, gitdir)) return false;
  const stat = await fs.statOrNull(gitdir);
  if (stat !== null && !stat.isDirectory()) {
    throw new WorkflowHostError("path_violation", `${gitdir} is a file, not a repository folder; move it away to create the repository there`, { gitdir, found: "file" });
  }
  if (stat !== null) {
    const foreign = (await fs.readdirOrEmpty(gitdir)).filter((name) => !OWN_PARTIAL_ENTRY.test(name));
    if (foreign.length > 0) {
      const shown = foreign.slice(0, 3).map((n) => JSON.stringify(n)).join(", ");
      throw new WorkflowHostError("path_violation", `${gitdir} exists and is not a repository (it holds ${shown}${foreign.length > 3 ? ", …" : ""}); move it away or choose another id`, { gitdir, found: "folder", entries: foreign.slice(0, 20) });
    }
  }
  await fs.mkdirp(`${gitdir}/objects/info`);
  await fs.mkdirp(`${gitdir}/objects/pack`);
  await fs.mkdirp(`${gitdir}/refs/heads`);
  await fs.mkdirp(`${gitdir}/refs/tags`);
  await writeIfAbsent(fs, `${gitdir}/config`, CONFIG, durable);
  await writeIfAbsent(fs, `${gitdir}/HEAD`, HEAD, durable);
  if (durable) {
    await fs.fsyncDir(gitdir);
    await fs.fsyncDir(gitdir.slice(0, gitdir.lastIndexOf("/")));
  }
  return true;
}
