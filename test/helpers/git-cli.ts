/**
 * Runs the real `git` command line against test repositories, isolated from the user's and the
 * system's git configuration so results do not depend on the machine.
 */
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

export interface GitResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const ISOLATED_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "git-cli",
  GIT_AUTHOR_EMAIL: "git-cli@example.com",
  GIT_COMMITTER_NAME: "git-cli",
  GIT_COMMITTER_EMAIL: "git-cli@example.com",
  GIT_AUTHOR_DATE: "2026-01-01T00:00:00Z",
  GIT_COMMITTER_DATE: "2026-01-01T00:00:00Z",
  LC_ALL: "C",
};

/** Options of {@link runGit}: working folder, stdin, and extra environment (e.g. `GIT_INDEX_FILE`). */
export interface RunGitOptions {
  readonly cwd?: string;
  readonly input?: string | Uint8Array;
  readonly env?: Readonly<Record<string, string>>;
}

/** Runs `git <args>` (in `cwd` when given) and returns its exit code and output; never throws. */
export function runGit(args: readonly string[], opts: RunGitOptions = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const env = opts.env === undefined ? ISOLATED_ENV : { ...ISOLATED_ENV, ...opts.env };
    const child = spawn("git", args, { cwd: opts.cwd, env, stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => err.push(chunk));
    child.on("error", reject);
    child.on("close", (code) => {
      resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
    });
    if (opts.input !== undefined) {
      // git may exit before reading its input; that is its answer, not a test failure.
      child.stdin?.on("error", () => undefined);
      child.stdin?.end(opts.input);
    }
  });
}

/**
 * Runs `git <args>` and returns stdout.
 * @throws Error with git's stderr when git exits non-zero.
 */
export async function git(args: readonly string[], opts: RunGitOptions = {}): Promise<string> {
  const result = await runGit(args, opts);
  if (result.code !== 0) {
    throw new Error(`git ${args.join(" ")} exited ${result.code}: ${result.stderr.trim()}`);
  }
  return result.stdout;
}

/** `git --git-dir=<gitdir> <args>`. */
export function gitAt(gitdir: string, args: readonly string[]): Promise<string> {
  return git([`--git-dir=${gitdir}`, ...args]);
}

/** True when a `git` binary is on PATH. */
export function hasGitCli(): Promise<boolean> {
  return new Promise((resolve) => {
    execFile("git", ["--version"], (error) => resolve(error === null));
  });
}

/**
 * Commits `files` (path → content, relative to the repo root) in the clone `work` of the bare
 * repository `gitdir` and pushes them to `main` with the real `git` CLI, as an outside writer
 * would ({@link pushChanges} removing nothing). Clones first when `work` does not exist yet,
 * else pulls `main` first.
 */
export async function pushFiles(gitdir: string, work: string, files: Readonly<Record<string, string>>, message: string): Promise<void> {
  await pushChanges(gitdir, work, [], files, message);
}

/**
 * One commit in the clone `work` of the bare repository `gitdir`, pushed to `main` with the real
 * `git` CLI, as an outside writer would: removes `remove` (files or whole folders, relative to the
 * repo root), then writes `files` (path → content). Clones first when `work` does not exist yet,
 * else pulls `main` first.
 * @returns the pushed commit's sha
 */
export async function pushChanges(gitdir: string, work: string, remove: readonly string[], files: Readonly<Record<string, string>>, message: string): Promise<string> {
  if (!existsSync(work)) await git(["clone", "--quiet", gitdir, work]);
  else await git(["pull", "--quiet", "--ff-only", "origin", "main"], { cwd: work });
  if (remove.length > 0) await git(["rm", "-r", "--quiet", "--", ...remove], { cwd: work });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(work, path)), { recursive: true });
    await writeFile(join(work, path), content);
  }
  await git(["add", "--all"], { cwd: work });
  await git(["commit", "--quiet", "-m", message], { cwd: work });
  await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: work });
  return (await git(["rev-parse", "HEAD"], { cwd: work })).trim();
}

/** {@link pushChanges} that only removes `paths`. @returns the pushed commit's sha */
export function pushRemovals(gitdir: string, work: string, paths: readonly string[], message: string): Promise<string> {
  return pushChanges(gitdir, work, paths, {}, message);
}

/** `git diff-tree -r` of a commit against its parent, as CommitChange-shaped rows (path, oid, status). */
export async function gitDiffTree(gitdir: string, sha: string): Promise<{ path: string; oid: string; status: string }[]> {
  const out = await gitAt(gitdir, ["diff-tree", "-r", "--no-commit-id", "--no-renames", sha]);
  const status: Record<string, string> = { A: "added", M: "modified", D: "deleted" };
  return out
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [meta, path] = line.split("\t") as [string, string];
      const parts = meta.split(" ");
      const s = parts[4] as string;
      return { path, oid: s === "D" ? (parts[2] as string) : (parts[3] as string), status: status[s] as string };
    });
}
