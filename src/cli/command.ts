/**
 * The shape of one `workflow-host` command. Each lives in its own file under `./commands/` and
 * is listed in `./commands/index.ts`.
 */
import type { OptionSpecs, FlagValues } from "./args.js";
import type { CliIo } from "./io.js";

export interface CliCommand {
  /** Words that name the command, e.g. `["timer", "set"]`. */
  readonly name: readonly string[];
  /** One line for the top-level help. */
  readonly summary: string;
  /** The full `--help` text: usage, description, options, examples. */
  readonly help: string;
  /** Accepted flags (`--help`/`-h` is added for every command). */
  readonly options: OptionSpecs;
  /**
   * Runs the command with parsed flags.
   * @returns the exit code: 0 ok, 1 failure (a usage error is thrown, not returned)
   */
  run(values: FlagValues, io: CliIo): Promise<number>;
}

/** The command's words joined by spaces. */
export function commandName(command: CliCommand): string {
  return command.name.join(" ");
}
