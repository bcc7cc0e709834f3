/**
 * Folders under `<dataDir>/deployments/` that are not deployments because of their name (not
 * `<repoId>.git` with a valid id). The store passes over them; the commands that list or serve
 * deployments (`repo list`, `check`, `serve`) name them once so a typo does not go unseen.
 */
import { readdir } from "node:fs/promises";
import { REPO_ID_PATTERN } from "../substrate/repo-id.js";

/**
 * Names of the folders under `<dataDir>/deployments/` whose name is no `<repoId>.git`, sorted;
 * none when the folder is absent or cannot be listed (the store reports that itself).
 */
export async function ignoredDeploymentFolders(dataDir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(`${dataDir}/deployments`, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isDirectory() && !(e.name.endsWith(".git") && REPO_ID_PATTERN.test(e.name.slice(0, -4))))
    .map((e) => e.name)
    .sort();
}

/** The one warning line naming the folders passed over, or null when there are none. */
export function ignoredDeploymentsLine(names: readonly string[]): string | null {
  if (names.length === 0) return null;
  return `warning: ${names.length === 1 ? "a folder" : `${names.length} folders`} under deployments/ ${names.length === 1 ? "is" : "are"} not named <repoId>.git (ids: 1-128 of A-Z a-z 0-9 _ -) and ${names.length === 1 ? "is" : "are"} ignored: ${names.map((n) => JSON.stringify(n)).join(", ")}`;
}
