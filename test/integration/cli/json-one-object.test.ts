/**
 * README: "every command prints one JSON object" with `--json`. Each command that takes `--json`
 * (but `serve`, which prints one object per line while it runs) is run on a small deployment
 * and its whole stdout must parse as one JSON object: not an array, not several values.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commands } from "../../../src/cli/commands/index.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-json-one-");
const clock = (): Date => new Date("2026-05-01T10:00:00.000Z");

/** A consumer c1 that parked the signal it was handed, so the dispatch verbs have a record. */
async function parkOneSignal(dataDir: string): Promise<void> {
  let done: () => void = () => {};
  const parked = new Promise<void>((resolve) => (done = resolve));
  const host = createWorkflowHost({ dataDir, watch: false, onDispatchEvent: (r) => r.type === "parked" && done() });
  host.dispatch({
    name: "c1",
    maxAttempts: 1,
    filter: { types: ["SignalReceived"] },
    handler: () => {
      throw new Error("receiver down");
    },
  });
  await host.start();
  await host.runtime("dep").deliverSignal("r1", "approve", { n: 1 }, "s-1");
  await parked;
  await host.stop();
}

describe("--json output", () => {
  it("is exactly one JSON object for every command that takes --json", async () => {
    const root = await tempDir();
    const d = join(root, "data");
    const schedules = join(root, "schedules.json");
    await writeFile(schedules, "[]");
    const dep = ["-d", d, "-r", "dep"];
    const runs: (readonly string[])[] = [
      ["repo", "create", ...dep],
      ["repo", "list", "-d", d],
      ["timer", "set", ...dep, "--run", "r1", "-t", "t1", "--fire-at", "2026-05-02T00:00:00Z"],
      ["timer", "set", ...dep, "--run", "r1", "-t", "t2", "--fire-at", "2026-05-02T00:00:00Z"],
      ["timer", "cancel", ...dep, "--run", "r1", "-t", "t2"],
      ["timer", "set", ...dep, "--run", "nightly", "-t", "tick", "--cron", "0 2 * * *"],
      ["timers", "-d", d],
      ["schedule", "list", ...dep],
      ["schedule", "describe", ...dep, "--run", "nightly", "-t", "tick"],
      ["schedule", "preview", "--cron", "0 2 * * *"],
      ["schedule", "pause", ...dep, "--run", "nightly", "-t", "tick"],
      ["schedule", "resume", ...dep, "--run", "nightly", "-t", "tick"],
      ["schedule", "trigger", ...dep, "--run", "nightly", "-t", "tick", "--request-id", "q-1"],
      ["schedule", "backfill", ...dep, "--run", "nightly", "-t", "tick", "--from", "2026-04-29T00:00:00Z", "--to", "2026-04-30T00:00:00Z"],
      ["schedule", "sync", ...dep, "--file", schedules, "--dry-run"],
      ["signal", "send", ...dep, "--run", "r1", "--name", "approve", "--id", "s-0"],
      ["runs", "list", ...dep],
      ["runs", "show", ...dep, "--run", "r1"],
      ["runs", "complete", ...dep, "--run", "done-1"],
      ["runs", "fail", ...dep, "--run", "done-2"],
      ["runs", "cancel", ...dep, "--run", "done-3"],
      ["runs", "compact", ...dep, "--run", "done-1"],
      ["check", "-d", d],
      ["dispatch", "status", "-d", d, "-c", "c1"],
      ["dispatch", "list", "-d", d, "-c", "c1"],
      ["dispatch", "retry", ...dep, "-c", "c1", "--all"],
      ["dispatch", "skip", ...dep, "-c", "c1", "--all"],
    ];
    const covered = new Set(runs.map((argv) => argv.slice(0, argv[0] === "timers" || argv[0] === "check" ? 1 : 2).join(" ")));
    const takingJson = commands.filter((c) => "json" in c.options && c.name.join(" ") !== "serve").map((c) => c.name.join(" "));
    expect(takingJson.filter((name) => !covered.has(name))).toEqual([]);

    for (const argv of runs) {
      // Runs need a first event before they can end; the dispatch verbs need a parked record.
      if (argv[0] === "runs" && ["complete", "fail", "cancel"].includes(argv[1] ?? "")) {
        expect((await runCli(["timer", "set", ...dep, "--run", argv[7] ?? "", "-t", "t", "--fire-at", "2026-06-01T00:00:00Z"], { clock })).code).toBe(0);
      }
      if (argv.join(" ") === ["dispatch", "status", "-d", d, "-c", "c1"].join(" ")) await parkOneSignal(d);
      const run = await runCli([...argv, "--json"], { clock });
      expect({ argv, code: run.code, stderr: run.stderr }).toEqual({ argv, code: 0, stderr: run.stderr });
      let parsed: unknown;
      expect(() => (parsed = JSON.parse(run.stdout)), `${argv.join(" ")} printed ${run.stdout.slice(0, 200)}`).not.toThrow();
      expect({ argv, kind: Array.isArray(parsed) ? "array" : typeof parsed }).toEqual({ argv, kind: "object" });
    }
  });
});
