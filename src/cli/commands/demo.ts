import type { CliCommand } from "../command.js";

const DEFAULT_DIR = "./data/demo";

/** `demo`: a guided tour on a scratch data dir, in about 5 seconds. */
export const demoCommand: CliCommand = {
  name: ["demo"],
  summary: "run a short tour: timers, a cron series, a signal (what npm start runs)",
  options: { "data-dir": { type: "string", short: "d" } },
  help: `Usage: workflow-host demo [--data-dir DIR]

Runs a host on a scratch data dir (default ${DEFAULT_DIR}) with one deployment, "demo", and
five runs: a one-shot that fell due while no host ran (fires at once on start), a cron series
"*/2 * * * * *" in Europe/Berlin whose missed ticks are skipped (misfire skip) before it fires
live, two one-shots 1.5 s and 3 s ahead, a run that waits for signal "approve" and gets it
after ~4.5 s, and one whose 2.5 s wait times out. Prints each event as it happens, then a
summary and the git commands to read the log. Takes about 5 seconds; exit 0 when everything
happened.

The data dir is reset at every start (only a folder the demo made, or an empty one), so the
demo can be run again and again. Nothing outside it is touched.

Options:
  -d, --data-dir DIR   scratch folder (default ${DEFAULT_DIR}, relative to the working folder)

Example:
  workflow-host demo && git --git-dir=${DEFAULT_DIR}/deployments/demo.git log --stat
`,
  async run(values, io) {
    const { runDemo } = await import("../demo/demo-main.js");
    return runDemo(values, io, DEFAULT_DIR);
  },
};
