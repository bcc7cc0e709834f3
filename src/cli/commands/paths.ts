/**
 * Paths the CLI prints, so people can point `git` at them.
 */
import { join } from "node:path";

/** Where deployment repos live in a data dir (the workflow-run kind's directory prefix). */
const DEPLOYMENTS = "deployments";

/** `<dataDir>/deployments/<repoId>.git`. */
export function gitdirOf(dataDir: string, repoId: string): string {
  return join(dataDir, DEPLOYMENTS, `${repoId}.git`);
}

/** Quotes a path for a POSIX shell when it needs it. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}
