/**
 * What a cluster host finds in its `<dataDir>/deployments` when it starts: the clones, maybe
 * with ref locks a killed writer left, and the instance id of the previous process on this data
 * dir. This process holds the data dir's host lock, so that previous process is gone (or has
 * lost its lock, and stops by itself): its leases can be taken back at once instead of waiting
 * for them to expire.
 */
import { readdir, readFile, rm, writeFile, mkdir } from "node:fs/promises";
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
  const previous = (await readFile(file, "utf8").catch(() => "")).trim();
  await mkdir(deploymentsDir, { recursive: true });
  await writeFile(file, `${instanceId}\n`);
  return { previousInstance: previous === "" || previous === instanceId ? null : previous };
}
