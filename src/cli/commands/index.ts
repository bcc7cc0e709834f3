/** Every `workflow-host` command, in the order the top-level help lists them. */
import type { CliCommand } from "../command.js";
import { checkCommand } from "./check.js";
import { demoCommand } from "./demo.js";
import { dispatchCommands } from "./dispatch.js";
import { repoCreateCommand } from "./repo-create.js";
import { repoListCommand } from "./repo-list.js";
import { runsCompactCommand } from "./runs-compact.js";
import { runsCancelCommand, runsCompleteCommand, runsFailCommand } from "./runs-end.js";
import { runsListCommand } from "./runs-list.js";
import { runsShowCommand } from "./runs-show.js";
import { scheduleCommands } from "./schedule.js";
import { serveCommand } from "./serve.js";
import { signalSendCommand } from "./signal-send.js";
import { timerCancelCommand } from "./timer-cancel.js";
import { timerSetCommand } from "./timer-set.js";
import { timersCommand } from "./timers.js";

export const commands: readonly CliCommand[] = [
  demoCommand,
  serveCommand,
  repoCreateCommand,
  repoListCommand,
  timerSetCommand,
  timerCancelCommand,
  timersCommand,
  ...scheduleCommands,
  signalSendCommand,
  runsListCommand,
  runsShowCommand,
  runsCompactCommand,
  runsCompleteCommand,
  runsFailCommand,
  runsCancelCommand,
  checkCommand,
  ...dispatchCommands,
];
