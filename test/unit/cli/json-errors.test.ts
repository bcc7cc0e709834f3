/**
 * With --json a failing command still prints one JSON object on stdout, `{"error": {"code",
 * "message"}}`, beside its usual stderr line, and keeps its exit code (1 failure, 2 usage).
 * Without --json, stdout stays empty.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "./cli-io.js";

interface ErrorBody {
  error: { code: string; message: string };
}

describe("an error under --json", () => {
  it.each([
    [["timers", "-d", "/nonexistent/data", "--json"], 1, "data_dir_not_found"],
    [["runs", "show", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "--json"], 1, "data_dir_not_found"],
    [["timer", "set", "-d", "/d", "-r", "dep", "--run", "r1", "-t", "t1", "--delay-ms", "soon", "--json"], 2, "usage"],
    [["timer", "set", "--json", "-d", "/d", "-r", "../escape", "--run", "r1", "-t", "t1", "--delay-ms", "5"], 2, "repo_id_invalid"],
    [["timers", "--json", "--no-such-flag"], 2, "usage"],
  ] as const)("prints one error object for %j", async (argv, exit, code) => {
    const run = await runCli(argv);
    expect(run.code).toBe(exit);
    const body = JSON.parse(run.stdout) as ErrorBody;
    expect(Object.keys(body)).toEqual(["error"]);
    expect(body.error.code).toBe(code);
    expect(typeof body.error.message).toBe("string");
    expect(run.stdout.trim().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(new RegExp(`^workflow-host: ${code}: `));
  });

  it("prints nothing on stdout without --json", async () => {
    const run = await runCli(["timers", "-d", "/nonexistent/data"]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: "" });
  });
});
