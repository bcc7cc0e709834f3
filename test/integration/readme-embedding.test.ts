/**
 * The README's "Embedding the host" example, extracted from the README as it stands and run as
 * a program in a child process (`workflow-host` resolves to the sources through tsconfig.json's
 * `paths`): it must end by itself with exit 0, and Ctrl-C while it waits must end it with exit
 * 0 and nothing on stderr.
 */
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { readmeCodeBlocks } from "../helpers/readme-blocks.js";
import { useTempDirs } from "../helpers/temp-dir.js";

const tsconfig = fileURLToPath(new URL("../../tsconfig.json", import.meta.url));
// tsx's loader by its absolute location: the example runs in a folder outside the repository.
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const tempDir = useTempDirs("workflow-host-readme-");

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the example in a fresh folder; `interruptOn` sends SIGINT once stdout shows that text. */
async function runExample(interruptOn?: string): Promise<Run> {
  const [example] = readmeCodeBlocks("Embedding the host", "js");
  const cwd = await tempDir();
  const file = join(cwd, "embed.mjs");
  await writeFile(file, example ?? "");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", tsxLoader, file], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (interruptOn !== undefined && stdout.includes(interruptOn)) child.kill("SIGINT");
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe("README: Embedding the host", () => {
  it("runs to completion as written: the timer fires, the signal arrives, the cancel takes", { timeout: 60_000 }, async () => {
    const run = await runExample();
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    expect(run.stdout).toMatch(/^reminder fired at /m);
    expect(run.stdout).toMatch(/^approved: \{"by":"ana"\}/m);
    expect(run.stdout).toMatch(/^timer due: cancelled$/m);
  });

  it("ends with exit 0 and no stack trace on Ctrl-C while a wait is pending", { timeout: 60_000 }, async () => {
    const run = await runExample("waiting for the reminder");
    expect({ code: run.code, signal: run.signal, stderr: run.stderr }).toEqual({ code: 0, signal: null, stderr: "" });
  });
});
