/**
 * The files that make a folder a bare git repository. Creation is idempotent and safe when
 * several processes race: every file is written to a temp name and renamed into place, folders
 * are created recursively, and HEAD comes last because git (and the store) treat a folder with
 * HEAD as a repository.
 */
import { randomBytes } from "node:crypto";
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

/**
 * Creates the bare-repository layout at `gitdir` where missing: `config` (bare, format 0,
 * `receive.fsckObjects`),
 * `objects/` (with `info/` and `pack/`), `refs/heads/`, `refs/tags/`, then HEAD
 * (`ref: refs/heads/main`). Existing files are left alone.
 * @returns true when HEAD had to be created.
 */
export async function ensureRepoLayout(fs: FsAdapter, gitdir: string, durable: boolean): Promise<boolean> {
  if (await repoLayoutExists(fs, gitdir)) return false;
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
