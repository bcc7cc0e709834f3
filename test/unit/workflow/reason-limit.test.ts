/**
 * A cancel or pause reason is at most MAX_REASON_CHARS characters, whichever face writes it
 * (library, CLI, HTTP): one limit, one typed error.
 */
import { describe, expect, it } from "vitest";
import { MAX_REASON_CHARS, newSchedulePaused, newTimerCancelled } from "../../../src/workflow/event-constructors.js";
import { expectCode } from "../../helpers/expect-code.js";
import { runCli } from "../cli/cli-io.js";

const at = "2026-05-01T10:00:00.000Z";

describe("cancel and pause reasons", () => {
  it("takes a reason of up to 1000 characters and refuses a longer one (event_invalid)", () => {
    expect(MAX_REASON_CHARS).toBe(1_000);
    const longest = "r".repeat(MAX_REASON_CHARS);
    expect(newTimerCancelled({ timerId: "t", reason: longest }, at).data.reason).toBe(longest);
    expect(newSchedulePaused({ timerId: "t", reason: longest }, at).data.reason).toBe(longest);
    expectCode(() => newTimerCancelled({ timerId: "t", reason: `${longest}r` }, at), "event_invalid");
    expectCode(() => newSchedulePaused({ timerId: "t", reason: `${longest}r` }, at), "event_invalid");
  });

  it("counts characters, not UTF-16 code units: 1000 emoji are taken, 1001 refused with their count", () => {
    const emoji = "\u{1F680}".repeat(MAX_REASON_CHARS);
    expect(newSchedulePaused({ timerId: "t", reason: emoji }, at).data.reason).toBe(emoji);
    expect(() => newTimerCancelled({ timerId: "t", reason: `${emoji}\u{1F680}` }, at)).toThrow(/reason is 1001 characters long/);
  });

  it.each([
    [["schedule", "pause", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1"]],
    [["timer", "cancel", "-d", "/nonexistent/data", "-r", "dep", "--run", "r1", "-t", "t1"]],
  ])("the CLI refuses a longer --reason as a bad flag value (exit 2, event_invalid), before touching the disk: %j", async (argv) => {
    const run = await runCli([...argv, "--reason", "r".repeat(100 * 1024)]);
    expect({ code: run.code, error: /^workflow-host: ([a-z_]+): /.exec(run.stderr)?.[1] }).toEqual({ code: 2, error: "event_invalid" });
  });
});
