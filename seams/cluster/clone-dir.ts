/**
 * What a cluster host finds in its `<dataDir>/deployments` when it starts: the clones, maybe
 * with ref locks a killed writer left, and the instance id of the previous process on this data
 * dir. This process holds the data dir's host lock, so that previous process is gone (or has
 * lost its lock, and stops by itself): its leases can be taken back at once instead of waiting
 * for them to expire.
 */
import { lstat, readdir, readFile, realpath, rm, writeFile, mkdir } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import { WorkflowHostError } from "../../src/errors.js";

/** The file naming the instance that serves from this data dir. */
const INSTANCE_FILE = ".cluster-instance";

/**
 * Clears the ref locks left in the clones (git fetch would refuse to move a locked ref), and
 * records `instanceId` as the one serving from `deploymentsDir`.
 * @returns the instance recorded before (null: none, or this one)
 * @throws path_escapes_data_dir when `deploymentsDir` leads outside the folder it is in (the data
 *   dir); the file system's error when it cannot be created or written
 */
export async function takeCloneDir(deploymentsDir: string, instanceId: string): Promise<{ previousInstance: string | null }> {
  const names = await readdir(deploymentsDir).catch(() => [] as string[]);
  // `<dataDir>/deployments` itself must lead inside the data dir, or nothing in it is touched.
  const root = await realpath(dirname(deploymentsDir)).catch(() => null);
  const found = await realpath(deploymentsDir).catch(() => null);
  const base = root !== null && found !== null && found.startsWith(`${root}${sep}`) ? found : null;
  if (found !== null && base === null) {
    throw new WorkflowHostError("path_escapes_data_dir", `${deploymentsDir} leads to ${found}, outside the data dir; nothing was removed or written there; replace the link with the folder itself`, { path: "deployments", found });
  }
  for (const name of names) {
    if (!name.endsWith(".git") || base === null) continue;
    // Removed only in folders that are the clone's own: a link in a clone (or the clone itself a
    // link) leading elsewhere would have a file there removed. Such a clone is left as it is;
    // its store refuses it (path_escapes_data_dir) and `check` names the link.
    const clone = join(deploymentsDir, name);
    const home = `${base}${sep}${name}`;
    const own = async (folder: string): Promise<boolean> => {
      const real = await realpath(join(clone, folder)).catch(() => null);
      return real !== null && (real === home || real.startsWith(`${home}${sep}`));
    };
    for (const lock of ["refs/heads/main.lock", "packed-refs.lock", "HEAD.lock"]) {
      const folder = lock.includes("/") ? lock.slice(0, lock.lastIndexOf("/")) : ".";
      if (await own(folder)) await rm(join(clone, lock), { force: true });
    }
    if (!(await own("refs/consumers"))) continue;
    const consumers = await readdir(join(clone, "refs/consumers")).catch(() => [] as string[]);
    for (const c of consumers) if (c.endsWith(".lock")) await rm(join(clone, "refs/consumers", c), { force: true });
  }
  const file = join(deploymentsDir, INSTANCE_FILE);
  const previous = (await readSmallTextOrEmpty(file, 4096)).trim();
  await mkdir(deploymentsDir, { recursive: true });
  // Removed first: writing into a FIFO left there would wait for a reader forever.
  await rm(file, { force: true });
  await writeFile(file, `${instanceId}\n`);
  return { previousInstance: previous === "" || previous === instanceId ? null : previous };
}

/**
 * The text of a regular file of at most `maxBytes`, or "" when it is absent, unreadable, bigger,
 * or not a regular file (a link at its place included): a FIFO in a clone would hang the read
 * (and a thread of the pool) forever.
 */
export async function readSmallTextOrEmpty(path: string, maxBytes: number): Promise<string> {
  // lstat: a link at the file's place is not a regular file, and what it leads to is not read.
  const found = await lstat(path).catch(() => null);
  if (found === null || !found.isFile() || found.size > maxBytes) return "";
  return readFile(path, "utf8").catch(() => "");
}
