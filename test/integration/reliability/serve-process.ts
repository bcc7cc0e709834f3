/**
 * `workflow-host serve` (and other TypeScript entry points) as child processes the reliability
 * suites start, watch line by line and kill. Output is only used to know when the host is up
 * and to explain a failure; every invariant is checked from the log itself.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CLI_MAIN = join(REPO_ROOT, "src/cli/main.ts");

export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface WatchedChild {
  readonly pid: number;
  readonly process: ChildProcess;
  /** Every complete line so far, stdout and stderr interleaved in arrival order. */
  lines(): readonly string[];
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves with the first line (past or future) matching `pattern`; rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
  readonly exited: Promise<ChildExit>;
  /** Whether the process has exited. */
  readonly done: boolean;
  kill(signal: NodeJS.Signals): void;
}

const running = new Set<ChildProcess>();

/** SIGKILLs every child this module started that is still running, and waits until they are gone. */
export async function killAllWatched(): Promise<void> {
  const dying = [...running].filter((child) => child.exitCode === null && child.signalCode === null);
  running.clear();
  await Promise.all(
    dying.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once("close", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
}

/** Starts `node --import tsx <script> <args>` in the repository root. */
export function spawnWatched(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): WatchedChild {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WORKFLOW_HOST_DATA_DIR: "", ...env },
  });
  running.add(child);
  const all: string[] = [];
  const partial = { stdout: "", stderr: "" };
  const whole = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  const take = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
    whole[stream] += chunk.toString("utf8");
    const text = partial[stream] + chunk.toString("utf8");
    const parts = text.split("\n");
    partial[stream] = parts.pop() ?? "";
    all.push(...parts);
    for (const listener of [...listeners]) listener();
  };
  child.stdout?.on("data", take("stdout"));
  child.stderr?.on("data", take("stderr"));
  let done = false;
  const exited = new Promise<ChildExit>((resolve) => {
    child.on("close", (code, signal) => {
      done = true;
      running.delete(child);
      for (const rest of [partial.stdout, partial.stderr]) if (rest !== "") all.push(rest);
      resolve({ code, signal });
      for (const listener of [...listeners]) listener();
    });
  });
  return {
    pid: child.pid ?? -1,
    process: child,
    lines: () => all,
    stdout: () => whole.stdout,
    stderr: () => whole.stderr,
    exited,
    get done() {
      return done;
    },
    kill: (signal) => {
      if (!done) child.kill(signal);
    },
    waitForLine(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        let scanned = 0;
        const check = (): void => {
          for (; scanned < all.length; scanned += 1) {
            const line = all[scanned] as string;
            if (pattern.test(line)) {
              finish();
              resolve(line);
              return;
            }
          }
          if (done) {
            finish();
            reject(new Error(`exited before printing ${String(pattern)}; last lines:\n${all.slice(-20).join("\n")}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no line matching ${String(pattern)} within ${timeoutMs} ms; last lines:\n${all.slice(-20).join("\n")}`));
        }, timeoutMs);
        const finish = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Starts `workflow-host serve --data-dir <dataDir> --json <extra>` from the sources. */
export function spawnServe(dataDir: string, extra: readonly string[] = []): WatchedChild {
  return spawnWatched(CLI_MAIN, ["serve", "--data-dir", dataDir, "--json", ...extra]);
}

/** Runs `workflow-host <args>` in a child process to completion. */
export async function runCliChild(args: readonly string[], timeoutMs = 60_000): Promise<ChildExit & { stdout: string; stderr: string }> {
  const child = spawnWatched(CLI_MAIN, args);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const exit = await child.exited;
  clearTimeout(timer);
  return { ...exit, stdout: child.stdout(), stderr: child.stderr() };
}

/** Sleeps on the real clock (integration tests only). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns something other than undefined, or throws after `timeoutMs`. */
export async function pollFor<T>(probe: () => Promise<T | undefined> | T | undefined, timeoutMs: number, everyMs = 50, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}
