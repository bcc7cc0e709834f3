/**
 * Runs a bench script in a new node process (nothing cached in memory) and reads the JSON it
 * prints as its last stdout line.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));

export interface ChildResult<T> {
  readonly result: T;
  /** Wall time from spawn to exit, ms (includes node and tsx start-up). */
  readonly wallMs: number;
}

/**
 * Spawns `node [nodeArgs] --import tsx bench/<script> ...args`.
 * @throws when the child exits non-zero or prints no JSON line, with its stderr
 */
export function runChild<T>(script: string, args: readonly string[], nodeArgs: readonly string[] = []): Promise<ChildResult<T>> {
  const startedMs = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(benchDir, script), ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      const wallMs = performance.now() - startedMs;
      const lines = Buffer.concat(out).toString("utf8").trim().split("\n");
      const last = lines[lines.length - 1] ?? "";
      if (code !== 0 || !last.startsWith("{")) {
        reject(new Error(`${script} ${args.join(" ")} exited ${String(code)}: ${Buffer.concat(err).toString("utf8").slice(-2_000)}`));
        return;
      }
      resolve({ result: JSON.parse(last) as T, wallMs });
    });
  });
}

/** What {@link runMilestones} returns: when each milestone line arrived, and the last line. */
export interface Milestones<T> {
  /** ms from spawn (this process's clock) to the arrival of each `{"at": name}` line. */
  readonly at: ReadonlyMap<string, number>;
  /** The last JSON line. */
  readonly result: T;
}

/**
 * Spawns `node [nodeArgs] --import tsx bench/<script> ...args` and stamps, on this process's
 * monotonic clock, the arrival of each stdout line `{"at": "<name>", …}` the child prints the
 * moment something happens. Times between processes are thus read on one clock.
 * @throws when the child exits non-zero or prints no JSON line, with its stderr
 */
export function runMilestones<T>(script: string, args: readonly string[], nodeArgs: readonly string[] = []): Promise<Milestones<T>> {
  const startedMs = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(benchDir, script), ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const at = new Map<string, number>();
    const err: Buffer[] = [];
    let pendingText = "";
    let last = "";
    child.stdout.on("data", (chunk: Buffer) => {
      const now = performance.now() - startedMs;
      pendingText += chunk.toString("utf8");
      let end: number;
      while ((end = pendingText.indexOf("\n")) >= 0) {
        const line = pendingText.slice(0, end).trim();
        pendingText = pendingText.slice(end + 1);
        if (!line.startsWith("{")) continue;
        last = line;
        const name = (JSON.parse(line) as { at?: unknown }).at;
        if (typeof name === "string" && !at.has(name)) at.set(name, now);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0 || last === "") {
        reject(new Error(`${script} ${args.join(" ")} exited ${String(code)}: ${Buffer.concat(err).toString("utf8").slice(-2_000)}`));
        return;
      }
      resolve({ at, result: JSON.parse(last) as T });
    });
  });
}
