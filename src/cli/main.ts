/**
 * The `workflow-host` command line. `main(argv)` parses, runs one command and returns the exit
 * code: 0 ok, 1 the operation failed, 2 a bad flag or flag value. Every error is one line on
 * stderr: `workflow-host: <code>: <what failed>`, and with `--json` also one JSON object on
 * stdout, `{"error":{"code","message"}}`, so a machine reading stdout sees the failure. `runCli` (used by `bin/workflow-host.js` and
 * by running this file directly) does the same for the real process.
 *
 * Start-up: this module and the command modules load only node built-ins and small helpers;
 * each command imports what it needs (git, the event schemas, the host) when it runs, so
 * `--help` and `--version` load none of it.
 */
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { isWorkflowHostError } from "../errors.js";
import { asIoFailure } from "../substrate/fs-adapter.js";
import { isFlagError, parseFlags, usageError, wantsHelp } from "./args.js";
import { oneLine } from "./format.js";
import { wrapHelp } from "./help-wrap.js";
import { commandName, type CliCommand } from "./command.js";
import { commands } from "./commands/index.js";
import { endQuietlyOnClosedPipe, outputFailed, processIo, type CliIo } from "./io.js";

/** One line per command: its name padded to the longest name given, then its summary. */
function commandTable(list: readonly CliCommand[]): string {
  const width = Math.max(...list.map((c) => commandName(c).length));
  return list.map((c) => `  ${commandName(c).padEnd(width)}  ${c.summary}`).join("\n");
}

const TOP_HELP = `workflow-host: durable timers and signals for workflow engines, with git repos as the database

Usage: workflow-host <command> [options]
       workflow-host <command> --help

Commands:
${commandTable(commands)}

Every command but demo takes --data-dir DIR (or $WORKFLOW_HOST_DATA_DIR); a data dir that does
not exist is data_dir_not_found (serve creates one with --init, repo create makes its own).

Exit codes: 0 ok; 1 the operation failed (an error, check found problems, or a file a flag
names cannot be read or is not valid: config_invalid); 2 a bad flag or flag value (unknown
option, missing value, a malformed id, instant, cron or number).
Errors are one line on stderr: "workflow-host: <code>: <message>".

--json: every command prints one JSON object on stdout (its top-level keys are listed in the
command's --help and stay stable; new keys may be added); serve --json prints one object per
line, each with "ts" and "event". A command that fails prints {"error":{"code","message"}}
instead (the same code and message as the stderr line; the exit code is unchanged). Durations are milliseconds in JSON (dueInMs, lateMs) and
human text otherwise ("in 3 d 4 h", "late 2 ms").

Examples:
  workflow-host demo
  workflow-host serve --data-dir ./data
  workflow-host repo create --data-dir ./data --repo payments
  workflow-host timer set --data-dir ./data --repo payments --run order-17 --timer reminder --delay-ms 60000
  workflow-host timers --data-dir ./data
  workflow-host signal send --data-dir ./data --repo payments --run order-17 --name approve
  workflow-host check --data-dir ./data
`;

/** Finds the command named by the leading words of `argv`; returns it and the remaining arguments. */
function findCommand(argv: readonly string[]): { command: CliCommand; rest: string[] } | null {
  let best: { command: CliCommand; rest: string[] } | null = null;
  for (const command of commands) {
    const words = command.name;
    if (words.every((word, i) => argv[i] === word) && (best === null || words.length > best.command.name.length)) {
      best = { command, rest: argv.slice(words.length) };
    }
  }
  return best;
}

function groupHelp(group: string): string | null {
  const members = commands.filter((c) => c.name.length > 1 && c.name[0] === group);
  if (members.length === 0) return null;
  return `Usage: workflow-host ${group} <${members.map((c) => c.name[1]).join("|")}> [options]\n\n${commandTable(members)}\n\nSee workflow-host ${group} <command> --help.\n`;
}

/**
 * The help `workflow-host help <topic…>` prints: a command's, or a group's (`help timer`).
 * @throws usage when the words name neither (`help timer snooze`, `help timers extra`)
 */
function helpOn(topic: readonly string[]): string {
  const found = findCommand(topic);
  if (found !== null && found.rest.length === 0) return found.command.help;
  const group = topic.length === 1 ? groupHelp(topic[0] ?? "") : null;
  if (group !== null) return group;
  throw usageError("", `unknown command "${topic.join(" ")}"`);
}

/**
 * Runs one `workflow-host` command.
 * @param argv the arguments after the program name
 * @param io where output goes and what the command may read (default: this process)
 * @returns the exit code: 0 ok, 1 failure (an error, or `check` found problems), 2 usage
 */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    const first = argv[0];
    if (first === undefined) {
      io.stderr.write(wrapHelp(TOP_HELP));
      return 2;
    }
    if (first === "--help" || first === "-h" || first === "help") {
      const topic = first === "help" ? argv.slice(1) : [];
      io.stdout.write(wrapHelp(topic.length === 0 ? TOP_HELP : helpOn(topic)));
      return 0;
    }
    if (first === "--version") {
      io.stdout.write(`${await packageVersion()}\n`);
      return 0;
    }
    const found = findCommand(argv);
    if (found === null) {
      const group = groupHelp(first);
      if (group !== null) {
        if (wantsHelp(argv.slice(1))) {
          io.stdout.write(wrapHelp(group));
          return 0;
        }
        const sub = argv[1];
        throw usageError(first, sub === undefined ? `${first} needs a subcommand` : `unknown command "${first} ${sub}"`);
      }
      throw usageError("", `unknown command "${first}"`);
    }
    const { command, rest } = found;
    if (wantsHelp(rest)) {
      io.stdout.write(wrapHelp(command.help));
      return 0;
    }
    const values = parseFlags(commandName(command), rest, command.options);
    return await command.run(values, io);
  } catch (caught) {
    // A file-system failure outside the store (the CLI's own files) is typed the same way.
    // Named by the command found ("serve"), never by raw arguments ("serve -d").
    const found = findCommand(argv);
    const error = asIoFailure(caught, found === null ? "the command" : `workflow-host ${commandName(found.command)}`);
    const json = found !== null && found.command.options["json"] !== undefined && asksForJson(found.rest);
    if (isWorkflowHostError(error)) {
      io.stderr.write(`workflow-host: ${oneLine(error.message)}\n`);
      if (json) printErrorObject(io, error.code, error.message);
      return isFlagError(error) ? 2 : 1;
    }
    const message = error instanceof Error ? error.message : String(error);
    io.stderr.write(`workflow-host: error: ${oneLine(message)}\n`);
    if (json) printErrorObject(io, "error", `error: ${message}`);
    return 1;
  }
}

/** Whether the command's arguments ask for JSON (`--json` before any `--`). */
function asksForJson(rest: readonly string[]): boolean {
  const end = rest.indexOf("--");
  return (end < 0 ? rest : rest.slice(0, end)).includes("--json");
}

/** The failure as one JSON line on stdout: `{"error":{"code","message"}}`. */
function printErrorObject(io: CliIo, code: string, message: string): void {
  try {
    io.stdout.write(`${JSON.stringify({ error: { code, message } })}\n`);
  } catch {
    // stdout itself failed (a closed pipe, a full disk): the stderr line has said it.
  }
}

async function packageVersion(): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  for (const up of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(await readFile(new URL(up, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "workflow-host" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // try the next candidate: the layout differs between src/ and dist/src/
    }
  }
  return "unknown";
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === import.meta.url;
  } catch {
    return false;
  }
}

/**
 * Runs `main` for the real process: sets its exit code. A stdout closed early (`| head -1`)
 * drops the rest of the output quietly; the exit code stays the command's own.
 */
export async function runCli(argv: readonly string[]): Promise<void> {
  endQuietlyOnClosedPipe();
  const code = await main(argv);
  // A command stopped by a failed write (serve, as on SIGPIPE) still exits 1.
  process.exitCode = outputFailed() ? 1 : code;
  // Everything a command opens is closed before main returns; this only guards against a
  // stray handle keeping a finished command alive.
  setTimeout(() => process.exit(), 3_000).unref();
}

if (isEntryPoint()) await runCli(process.argv.slice(2));
