/**
 * How the person who ran the demo runs the CLI next, so its closing hint can be pasted as it is:
 * `npm run cli -- <command>` in this repository (where `npm start` runs the sources),
 * `npx workflow-host <command>` where the package is installed in a project, and
 * `workflow-host <command>` where the command is on the PATH (a global install, `npm link`).
 */
import { basename, sep } from "node:path";

export interface InvocationContext {
  /** `import.meta.url` of the running CLI module: a `.ts` file is the sources of a checkout. */
  readonly moduleUrl: string;
  /** The script the process was started with (`process.argv[1]`), not resolved through links. */
  readonly entryPath: string | undefined;
  /** The environment: npm sets `npm_command` ("exec" under `npx`). */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The words that start a `workflow-host` command line for this person, e.g. `npx workflow-host`. */
export function cliInvocation(context: InvocationContext): string {
  if (context.moduleUrl.endsWith(".ts")) return "npm run cli --";
  const entry = context.entryPath ?? "";
  // npx and a project's own scripts run the bin link in node_modules/.bin.
  if (context.env["npm_command"] === "exec" || entry.split(sep).includes("node_modules")) return "npx workflow-host";
  if (basename(entry) === "workflow-host") return "workflow-host";
  // The built code of a checkout (node bin/workflow-host.js): its package.json has the script.
  return "npm run cli --";
}
