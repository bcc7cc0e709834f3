/**
 * Argument parsing for every command, over node's `util.parseArgs` (strict: unknown options and
 * stray positionals are usage errors).
 *
 * The exit-code rule: every bad flag or flag value exits 2, every failure of the operation
 * exits 1. A file a flag names (`schedule sync --file`, `serve --dispatch`, `serve --tokens`) is
 * read by the operation: one that cannot be read or is not valid is `config_invalid`, exit 1
 * (flags are checked before it is read). A usage error is a `WorkflowHostError` with code `usage`; a flag value refused by its
 * own parser (a bad id is `id_invalid`, a bad instant `time_invalid`, …) keeps its code and is
 * marked as a flag error by {@link checkFlags}. `main()` prints either as one line and exits 2.
 */
import { isAbsolute, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { isWorkflowHostError, WorkflowHostError } from "../errors.js";
import type { CliIo } from "./io.js";

export type OptionSpecs = NonNullable<ParseArgsConfig["options"]>;
export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

/** A usage error for `command` (its words, e.g. "timer set"), pointing at its help. */
export function usageError(command: string, detail: string): WorkflowHostError {
  const where = command === "" ? "workflow-host --help" : `workflow-host ${command} --help`;
  return new WorkflowHostError("usage", `${detail}; see ${where}`, { command });
}

const flagErrors = new WeakSet<WorkflowHostError>();

/**
 * Runs a command's flag checks: an error they throw is an error in the command line (exit 2),
 * whatever its code, and its message points at the command's help.
 * @returns what `check` returns
 */
export function checkFlags<T>(command: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (!isWorkflowHostError(error) || error.code === "usage") throw error;
    const marked = new WorkflowHostError(error.code, `${error.message.replace(/^[a-z_]+: /, "")}; see workflow-host ${command} --help`, { ...error.data }, { cause: error });
    flagErrors.add(marked);
    throw marked;
  }
}

/** Whether an error is a bad flag or flag value (exit 2) rather than a failed operation (exit 1). */
export function isFlagError(error: unknown): boolean {
  return isWorkflowHostError(error) && (error.code === "usage" || flagErrors.has(error));
}

/** Whether the arguments ask for help, wherever `--help`/`-h` stands (before `--`). */
export function wantsHelp(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === "--") return false;
    if (arg === "--help" || arg === "-h") return true;
  }
  return false;
}

/**
 * Parses a command's flags.
 * @throws usage for an unknown option, a missing option value, a positional argument, a
 *   single-value option given more than once (`--run a --run b`, `-r a --run b`; an option
 *   declared `multiple` may repeat)
 */
export function parseFlags(command: string, argv: readonly string[], options: OptionSpecs): FlagValues {
  let parsed: ReturnType<typeof parseArgs<{ options: OptionSpecs; strict: true; allowPositionals: false; tokens: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // parseArgs takes "--delay-ms -5" as an option with no value followed by an option "-5".
    const ambiguous = /^Option '(--[\w-]+)'.* argument is ambiguous/.exec(message);
    if (ambiguous?.[1] !== undefined) {
      const option = ambiguous[1];
      const given = argv[argv.indexOf(option) + 1] ?? "-1";
      throw usageError(command, `option '${option}' is followed by "${given}", which reads as an option; to pass it as the value write ${option}=${given}`);
    }
    // Its messages run on over several sentences and lines; the first one says what is wrong.
    const first = message.split(/\.\s/)[0] ?? message;
    throw usageError(command, first.charAt(0).toLowerCase() + first.slice(1));
  }
  // parseArgs keeps the last of repeated values; a second value is more likely a slip than an
  // intent, so neither is guessed.
  const given = new Map<string, string[]>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || options[token.name]?.type !== "string" || options[token.name]?.multiple === true) continue;
    const list = given.get(token.name) ?? [];
    list.push(token.value ?? "");
    given.set(token.name, list);
    if (list.length > 1) {
      throw usageError(command, `--${token.name} is given more than once (${list.map((v) => JSON.stringify(v)).join(", ")}); give it once`);
    }
  }
  return parsed.values as FlagValues;
}

/** A string flag's value, or undefined when absent. */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** A string flag that must be given. @throws usage when missing, or given empty (`--repo ""`) */
export function requiredFlag(command: string, values: FlagValues, name: string): string {
  const value = stringFlag(values, name);
  if (value === undefined) throw usageError(command, `missing --${name}`);
  if (value === "") throw usageError(command, `--${name} is given empty; give it a value`);
  return value;
}

/**
 * An integer flag within `min` … `max`, or `fallback` when absent. The value is plain decimal
 * digits (a leading `-` for a negative one): no spaces around it, no `+`, exponent or separators.
 * @throws usage for a non-integer or out-of-range value
 */
export function intFlag(command: string, values: FlagValues, name: string, range: { min: number; max: number }, fallback?: number): number | undefined {
  const raw = stringFlag(values, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(value) || value < range.min || value > range.max) {
    throw usageError(command, `--${name} ${JSON.stringify(raw)} is not an integer in ${range.min}..${range.max}`);
  }
  return value;
}

/** Largest `--limit` of a listing that pages (`runs list`, `timers`). */
export const MAX_LIST_LIMIT = 10_000_000;

/** One of a fixed set of words, or `fallback` when absent. @throws usage for another value */
export function choiceFlag<T extends string>(command: string, values: FlagValues, name: string, choices: readonly T[], fallback: T): T {
  const raw = stringFlag(values, name);
  if (raw === undefined) return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw usageError(command, `--${name} ${JSON.stringify(raw)} is not one of ${choices.join(", ")}`);
  }
  return raw as T;
}

/** The `--data-dir` option shared by every command. */
export const dataDirOption: OptionSpecs = { "data-dir": { type: "string", short: "d" } };

/**
 * The data dir: `--data-dir`, else `$WORKFLOW_HOST_DATA_DIR`, resolved against the working
 * folder. @throws usage when neither is set
 */
export function dataDirFlag(command: string, values: FlagValues, io: CliIo): string {
  const raw = stringFlag(values, "data-dir") ?? io.env["WORKFLOW_HOST_DATA_DIR"];
  if (raw === undefined || raw === "") throw usageError(command, "missing --data-dir (or set WORKFLOW_HOST_DATA_DIR)");
  return isAbsolute(raw) ? raw : resolve(io.cwd, raw);
}
