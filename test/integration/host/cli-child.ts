/**
 * The `workflow-host` CLI (and other TypeScript entry points) as child processes, for
 * end-to-end tests: run to completion, or keep running while the test waits for output lines.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { existsSync } from "node:fs";
import { join } from "node:path";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CLI_MAIN = join(REPO_ROOT, "src/cli/main.ts");

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunningChild {
  readonly pid: number;
  readonly process: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout or stderr line matching `pattern`; rejects after `timeoutMs` or on exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  readonly exited: Promise<Exit>;
  kill(signal: NodeJS.Signals): void;
}

const children = new Set<ChildProcess>();

/** SIGKILLs every child still running (for afterEach). */
export function killAllChildren(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  children.clear();
}

/** Starts `node --import tsx <script> <args>` in the repo root. */
export function spawnTs(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): RunningChild {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WORKFLOW_HOST_DATA_DIR: "", ...env },
  });
  children.add(child);
  let out = "";
  let err = "";
  const watchers = new Set<() => void>();
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
    for (const w of watchers) w();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
    for (const w of watchers) w();
  });
  const exited = new Promise<Exit>((resolve) => {
    child.on("close", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
      for (const w of watchers) w();
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    pid: child.pid ?? -1,
    process: child,
    stdout: () => out,
    stderr: () => err,
    exited,
    kill: (signal) => child.kill(signal),
    waitFor(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const line = `${out}\n${err}`.split("\n").find((l) => pattern.test(l));
          if (line !== undefined) {
            finish();
            resolve(line);
          } else if (done) {
            finish();
            reject(new Error(`exited before printing ${String(pattern)}\nstdout:\n${out}\nstderr:\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no line matching ${String(pattern)} within ${timeoutMs} ms\nstdout:\n${out}\nstderr:\n${err}`));
        }, timeoutMs);
        const finish = (): void => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        check();
      });
    },
  };
}

/** Starts `workflow-host <args>` from the sources. */
export function spawnCli(args: readonly string[]): RunningChild {
  return spawnTs(CLI_MAIN, args);
}

/** Runs `workflow-host <args>` to completion. */
export async function runCliProcess(args: readonly string[]): Promise<Exit & { stdout: string; stderr: string }> {
  const child = spawnCli(args);
  const exit = await child.exited;
  return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
}

/**
 * Polls `probe` every `everyMs` until it returns a value other than undefined, or fails after
 * `timeoutMs`; the failure shows the output of `witness` (the child whose work is awaited).
 */
export async function pollUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number, witness?: RunningChild, everyMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const output = witness === undefined ? "" : `\nstdout:\n${witness.stdout()}\nstderr:\n${witness.stderr()}`;
      throw new Error(`condition not met within ${timeoutMs} ms${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Whether the data dir still holds a host lock folder or holder file. */
export function lockLeft(dataDir: string): boolean {
  return existsSync(join(dataDir, "host.lock")) || existsSync(join(dataDir, "host.lock.json"));
}

/**
 * Runs `workflow-host <args>` inside this process on the real clock: for setup steps, where a
 * child process would only add start-up time.
 */
export async function cliInProcess(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { runCli } = await import("../../unit/cli/cli-io.js");
  return runCli(args, { clock: () => new Date() });
}
