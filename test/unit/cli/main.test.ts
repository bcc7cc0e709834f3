import { describe, expect, it } from "vitest";
import { commands } from "../../../src/cli/commands/index.js";
import { runCli } from "./cli-io.js";

const oneLine = (text: string): boolean => text.endsWith("\n") && !text.slice(0, -1).includes("\n");

describe("workflow-host CLI: help, usage errors and exit codes", () => {
  it("prints the command list for --help, -h and help, exit 0", async () => {
    for (const argv of [["--help"], ["-h"], ["help"]]) {
      const run = await runCli(argv);
      expect(run.code).toBe(0);
      for (const command of commands) expect(run.stdout).toContain(command.name.join(" "));
      expect(run.stdout).toContain("Exit codes: 0 ok; 1 the operation failed");
    }
  });

  it("prints the usage to stderr and exits 2 without a command", async () => {
    const run = await runCli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Usage: workflow-host <command>");
  });

  it.each(commands.map((c) => [c.name.join(" ")]))("has --help with usage, options and an example: %s", async (name) => {
    for (const flag of ["--help", "-h"]) {
      const run = await runCli([...name.split(" "), flag]);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Usage: workflow-host ${name}`);
      expect(run.stdout).toContain("Options:");
      expect(run.stdout).toMatch(/Examples?:/);
      expect(run.stderr).toBe("");
    }
    const viaHelp = await runCli(["help", ...name.split(" ")]);
    expect(viaHelp.stdout).toContain(`Usage: workflow-host ${name}`);
  });

  it.each([[["help", "frobnicate"]], [["help", "timer", "snooze"]], [["help", "timers", "extra"]]])("refuses help on a command that does not exist (usage, exit 2): %j", async (argv) => {
    const run = await runCli(argv);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^workflow-host: usage: unknown command /);
    expect(oneLine(run.stderr)).toBe(true);
  });

  it("shows a group's help for `help timer`", async () => {
    const run = await runCli(["help", "timer"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("timer cancel");
  });

  it("shows --help even next to bad flags", async () => {
    const run = await runCli(["timer", "set", "--bogus", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Usage: workflow-host timer set");
  });

  it("lists a group's subcommands for `timer --help`", async () => {
    const run = await runCli(["timer", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("timer set");
    expect(run.stdout).toContain("timer cancel");
  });

  it.each([
    [["frobnicate"], /unknown command "frobnicate"/],
    [["timer"], /timer needs a subcommand/],
    [["timer", "snooze"], /unknown command "timer snooze"/],
    [["timers", "--data-dir", "/d", "--bogus"], /unknown option '--bogus'/],
    [["timers", "--data-dir"], /argument missing/],
    [["timers", "extra", "--data-dir", "/d"], /unexpected argument 'extra'/],
    [["timers"], /missing --data-dir/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1"], /exactly one of --fire-at, --delay-ms, --cron/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "5", "--fire-at", "2026-05-01T10:00:00Z"], /exactly one/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "soon"], /--delay-ms "soon" is not an integer/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "-5"], /option '--delay-ms' is followed by "-5", which reads as an option; to pass it as the value write --delay-ms=-5/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "5", "--timezone", "UTC"], /apply to --cron only/],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--cron", "* * * * *", "--misfire", "never"], /--misfire "never" is not one of skip, latest, all/],
    [["signal", "send", "-d", "/d", "-r", "dep", "--run", "r1", "-n", "go", "--payload", "{nope"], /--payload is not JSON/],
    [["signal", "send", "-d", "/d", "-r", "dep", "--run", "r1"], /missing --name/],
    [["serve", "-d", "/d", "--poll-ms", "0"], /--poll-ms "0" is not an integer in 10\.\./],
    [["serve", "-d", "/d", "--durability", "maybe"], /--durability "maybe"/],
    // Integers in flags are plain digits: no padding, sign, exponent or separators.
    [["runs", "list", "-d", "/d", "-r", "dep", "--limit", " 5"], /--limit " 5" is not an integer/],
    [["runs", "list", "-d", "/d", "-r", "dep", "--limit", "5 "], /--limit "5 " is not an integer/],
    [["runs", "list", "-d", "/d", "-r", "dep", "--limit", "+5"], /--limit "\+5" is not an integer/],
    [["serve", "-d", "/d", "--poll-ms", "\t100"], /--poll-ms "\\t100" is not an integer/],
    [["serve", "-d", "/d", "--poll-ms", "1e3"], /--poll-ms "1e3" is not an integer/],
  ])("exits 2 with one usage line for %j", async (argv, pattern) => {
    const run = await runCli(argv);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(oneLine(run.stderr)).toBe(true);
    expect(run.stderr).toMatch(/^workflow-host: usage: /);
    expect(run.stderr).toMatch(pattern);
    expect(run.stderr).toContain("--help");
  });

  it("refuses a repeated single-value flag, by any spelling, naming it (exit 2)", async () => {
    const run = await runCli(["timer", "cancel", "-d", "/d", "-r", "dep", "--run", "a", "--run", "b", "-t", "t1"]);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toBe(true);
    expect(run.stderr).toMatch(/^workflow-host: usage: --run is given more than once/);
    const mixed = await runCli(["timers", "-d", "/d1", "--data-dir", "/d2"]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toMatch(/--data-dir is given more than once/);
  });

  it.each(commands.flatMap((c) => Object.entries(c.options).flatMap(([name, spec]) => (spec.type === "string" && spec.multiple !== true ? [[c.name.join(" "), name]] : []))))(
    "refuses a repeated single-value flag: %s --%s",
    async (command, name) => {
      const run = await runCli([...command.split(" "), `--${name}`, "x", `--${name}`, "y"]);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(new RegExp(`^workflow-host: usage: --${name} is given more than once`));
    },
  );

  // One exit-code rule: a bad flag value exits 2 like an unknown flag, whichever parser refuses
  // it, and keeps its own code on the error line.
  it.each([
    [["repo", "create", "--data-dir", "/nonexistent/data", "--repo", "../escape"], "repo_id_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1", "--fire-at", "2026-03-08T02:30:00"], "time_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1", "--fire-at", "2026-02-30T00:00:00Z"], "time_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1", "--cron", "0 0 * * *", "--timezone", "America/New_Yrok"], "cron_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1", "--cron", "61 * * * *"], "cron_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "a/b", "-t", "t1", "--delay-ms", "5"], "id_invalid"],
    [["timer", "set", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "5", "--step", "../x"], "id_invalid"],
    [["timer", "cancel", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", ".hidden"], "id_invalid"],
    [["signal", "send", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-n", "go", "--id", "a b"], "id_invalid"],
    [["runs", "show", "-d", "/nonexistent/data", "-r", "dep", "--run", ".."], "id_invalid"],
    [["timers", "-d", "/nonexistent/data", "-r", "../escape"], "repo_id_invalid"],
    [["check", "-d", "/nonexistent/data", "-r", "../escape"], "repo_id_invalid"],
  ])("exits 2 for a bad flag value %j, naming its code, before touching the disk", async (argv, code) => {
    const run = await runCli(argv);
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toBe(true);
    expect(run.stderr).toMatch(new RegExp(`^workflow-host: ${code}: `));
    expect(run.stderr).toContain("--help");
  });

  it("reads --data-dir from WORKFLOW_HOST_DATA_DIR and reports a missing data dir as data_dir_not_found (exit 1)", async () => {
    const run = await runCli(["timers"], { env: { WORKFLOW_HOST_DATA_DIR: "/nonexistent/data" } });
    expect(run.code).toBe(1);
    expect(oneLine(run.stderr)).toBe(true);
    expect(run.stderr).toMatch(/^workflow-host: data_dir_not_found: data dir \/nonexistent\/data does not exist/);
    expect(run.stderr).toContain("workflow-host repo create --data-dir /nonexistent/data");
  });

  it("refuses to serve a data dir that does not exist unless --init is given", async () => {
    const run = await runCli(["serve", "--data-dir", "/nonexistent/typo"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: data_dir_not_found: /);
    expect(run.stderr).toContain("--init");
  });

  it("documents the exit-code rule and the --json shape in --help", async () => {
    const run = await runCli(["--help"]);
    expect(run.stdout).toMatch(/Exit codes: 0 ok; 1 the operation failed[^;]*; 2 a bad flag or\s+flag value/);
    expect(run.stdout).toContain("--json: every command prints one JSON object");
  });

  it("an empty --cron given to schedule preview is cron_invalid (exit 2), not a missing flag", async () => {
    const empty = await runCli(["schedule", "preview", "--cron", ""]);
    expect({ code: empty.code, error: /^workflow-host: ([a-z_]+): /.exec(empty.stderr)?.[1] }).toEqual({ code: 2, error: "cron_invalid" });
    const missing = await runCli(["schedule", "preview"]);
    expect({ code: missing.code, error: /^workflow-host: ([a-z_]+): /.exec(missing.stderr)?.[1] }).toEqual({ code: 2, error: "usage" });
  });

  it("refuses --retention-check-ms together with --retention-ms off (exit 2, usage), before touching the disk", async () => {
    const run = await runCli(["serve", "-d", "/nonexistent/data", "--retention-ms", "off", "--retention-check-ms", "5000"]);
    expect({ code: run.code, error: /^workflow-host: ([a-z_]+): /.exec(run.stderr)?.[1] }).toEqual({ code: 2, error: "usage" });
    expect(run.stderr).toContain("--retention-check-ms");
  });

  it("schedule preview refuses --start-at after --end-at (exit 2, usage) naming both, rather than an empty table", async () => {
    const run = await runCli(["schedule", "preview", "--cron", "* * * * *", "--start-at", "2026-05-02T00:00:00Z", "--end-at", "2026-05-01T00:00:00Z"]);
    expect({ code: run.code, error: /^workflow-host: ([a-z_]+): /.exec(run.stderr)?.[1] }).toEqual({ code: 2, error: "usage" });
    expect(run.stderr).toContain("--start-at");
    expect(run.stderr).toContain("--end-at");
  });

  it("signal send --help says a run with no log is started by its first signal, as over HTTP", async () => {
    const run = await runCli(["signal", "send", "--help"]);
    expect(run.stdout.replace(/\s+/g, " ")).toContain("A run with no log is started by its first signal (seq 1), as over HTTP and through the runtime");
  });

  it("prints the package version", async () => {
    const run = await runCli(["--version"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
