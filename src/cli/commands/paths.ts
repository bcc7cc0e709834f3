/**
 * Paths the CLI prints, so people can point `git` at them.
 */
import { join } from "node:path";
import { WORKFLOW_RUN_DIRECTORY_PREFIX } from "../../workflow/workflow-run-kind.js";

/** `<dataDir>/deployments/<repoId>.git`. */
export function gitdirOf(dataDir: string, repoId: string): string {
  return join(dataDir, WORKFLOW_RUN_DIRECTORY_PREFIX, `${repoId}.git`);
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
