import { describe, expect, it } from "vitest";
import { printEvent } from "../../../src/cli/commands/serve.js";
import type { CliIo } from "../../../src/cli/io.js";
import type { SchedulerEvent } from "../../../seams/scheduler/scheduler-types.js";

function lineOf(event: SchedulerEvent): string {
  let out = "";
  const io = {
    stdout: { write: (chunk: string) => (out += chunk) },
    stderr: { write: () => true },
    env: {},
    cwd: "/",
    signals: { on: () => undefined, off: () => undefined },
    clock: () => new Date("2026-05-01T10:00:00.000Z"),
  } as unknown as CliIo;
  printEvent(io, event, false);
  return out;
}

describe("serve's event lines count in words", () => {
  it("says 1 run, 1 timer, 1 bad event in the recovered line", () => {
    const line = lineOf({ type: "recovered", repoId: "dep", commitSha: null, runs: 1, pending: 1, badEvents: 1, ms: 3 });
    expect(line).toContain("dep: 1 run, 1 timer pending, 1 bad event,");
  });

  it("keeps the plural for other counts", () => {
    const line = lineOf({ type: "recovered", repoId: "dep", commitSha: null, runs: 0, pending: 2, badEvents: 3, ms: 3 });
    expect(line).toContain("dep: 0 runs, 2 timers pending, 3 bad events,");
  });

  it("says 1 missed tick and 1 timer where a count is 1", () => {
    const skipped = lineOf({ type: "skipped", repoId: "dep", runId: "r", timerId: "t", firstMissed: "a", lastMissed: "a", count: 1, commitSha: "0123456789abcdef" });
    expect(skipped).toContain(" 1 missed tick ");
    const failed = lineOf({ type: "commit_failed", repoId: "dep", timers: 1, retryInMs: 1000, error: new Error("x") });
    expect(failed).toContain("dep: 1 timer, retry in");
  });
});
