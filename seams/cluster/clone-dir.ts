/**
 * What a cluster host finds in its `<dataDir>/deployments` when it starts: the clones, maybe
 * with ref locks a killed writer left, and the instance id of the previous process on this data
 * dir. This process holds the data dir's host lock, so that previous process is gone (or has
 * lost its lock, and stops by itself): its leases can be taken back at once instead of waiting
 * for them to expire.
 */
import { readdir, readFile, rm, stat, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";

/** The file naming the instance that serves from this data dir. */
const INSTANCE_FILE = ".cluster-instance";

/**
 * Clears the ref locks left in the clones (git fetch would refuse to move a locked ref), and
 * records `instanceId` as the one serving from `deploymentsDir`.
 * @returns the instance recorded before (null: none, or this one)
 * @throws the file system's error when `deploymentsDir` cannot be created or written
 */
export async function takeCloneDir(deploymentsDir: string, instanceId: string): Promise<{ previousInstance: string | null }> {
  const names = await readdir(deploymentsDir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.endsWith(".git")) continue;
    for (const lock of ["refs/heads/main.lock", "packed-refs.lock", "HEAD.lock"]) await rm(join(deploymentsDir, name, lock), { force: true });
    const consumers = await readdir(join(deploymentsDir, name, "refs/consumers")).catch(() => [] as string[]);
    for (const c of consumers) if (c.endsWith(".lock")) await rm(join(deploymentsDir, name, "refs/consumers", c), { force: true });
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
 * or not a regular file: a FIFO in a clone would hang the read (and a thread of the pool) forever.
 */
export async function readSmallTextOrEmpty(path: string, maxBytes: number): Promise<string> {
  const found = await stat(path).catch(() => null);
  if (found === null || !found.isFile() || found.size > maxBytes) return "";
  return readFile(path, "utf8").catch(() => "");
}
