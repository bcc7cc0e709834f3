/**
 * The git transport of cluster mode, through the real `git` command line: a deployment's remote
 * (any URL git can push to and fetch from) is its source of truth, and the host's bare repository
 * under the data dir is a local clone of it.
 *
 * - `pushCas` is the fence: it pushes one commit with `--force-with-lease=<ref>:<expected old>`,
 *   so the remote moves only if its ref is still where this host last saw it. A loss means
 *   someone else moved the log.
 * - `fetch` brings the remote's refs into the clone (forced: the remote wins), with git's own
 *   compare-and-swap on the local ref, so it never overwrites a commit the store moved to
 *   meanwhile (it fails instead, and is retried).
 * - `takeOver` appends an empty "lease taken" commit on the remote tip: from then on, a push by
 *   the previous holder (expecting the old tip) is rejected, whatever it believes about its lease.
 */
import { spawn } from "node:child_process";
import * as nodeFs from "node:fs";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { WorkflowHostError } from "../../src/errors.js";
import { findEscapingLinks } from "../../src/substrate/contained-fs.js";
import { MAX_PACKED_REFS_BYTES, MAX_REF_FILE_BYTES } from "../../src/substrate/bounded-file.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import { readSmallTextOrEmpty } from "./clone-dir.js";
import type { Clock, Timers } from "../../src/time/clock.js";

/** Refs a clone mirrors: the run logs and the dispatch consumers' progress. */
const FETCH_REFSPECS = ["+refs/heads/*:refs/heads/*", "+refs/consumers/*:refs/consumers/*"];
const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

export interface GitRemoteOptions {
  /** Remotes live at `<remoteBase>/<repoId>.git` (a path, file://, ssh://, https://). */
  readonly remoteBase: string;
  /** Commit identity of takeover and genesis commits. */
  readonly identity: { readonly name: string; readonly email: string };
  /** Longest a git call may run before it is killed and counts as `remote_unavailable` (ms, default 20 000), counted on `timers`. */
  readonly timeoutMs?: number;
  /** Wall clock for the dates of takeover and genesis commits. */
  readonly clock: Clock;
  /** Where the limit on each git call runs. */
  readonly timers: Timers;
  /**
   * Environment of every git process (credentials helpers, `GIT_SSH_COMMAND`, proxies, `PATH`).
   * Default: this process's environment (`process.env`). Whatever it holds, git's user and
   * system configuration files are ignored and it never prompts.
   */
  readonly env?: GitEnv;
}

/** Environment variables of a git process. */
export type GitEnv = Readonly<Record<string, string | undefined>>;

/** How {@link runGit} runs one git process. */
export interface RunGitOptions {
  /** Its environment (see {@link GitRemoteOptions.env}); `extraEnv` is laid over it. */
  readonly env: GitEnv;
  readonly extraEnv?: Record<string, string>;
  /** Killed after this long (ms) on `timers`, then resolved with code -1; default: no limit. */
  readonly timeoutMs?: number;
  readonly timers: Timers;
}

export interface GitResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export type PushOutcome = { readonly accepted: true } | { readonly accepted: false; readonly reason: string };

export interface GitRemote {
  url(repoId: string): string;
  /**
   * Creates the bare clone at `gitdir` (`<dataDir>/deployments/<id>.git`) when absent (HEAD →
   * refs/heads/main). First refuses a clone holding a symbolic link that leads outside it (or
   * that is itself a link): the git commands that follow write through links, which the store's
   * own checks (contained-fs.ts) never see. Walks the clone's folders once per call.
   * @throws path_escapes_data_dir naming the first such link (relative to the data dir)
   */
  ensureClone(gitdir: string): Promise<void>;
  /**
   * Fetches the remote's refs into the clone. @throws remote_unavailable (unreachable, or the
   * local ref moved under the fetch: retry)
   */
  fetch(gitdir: string, repoId: string): Promise<void>;
  /** Pushes `to` onto `ref` if the remote's `ref` is at `from` (null: absent). @throws remote_unavailable */
  pushCas(gitdir: string, repoId: string, ref: string, from: string | null, to: string): Promise<PushOutcome>;
  /**
   * Fetches, then appends an empty commit saying `message` on the remote tip of refs/heads/main
   * (retrying when another push wins), and moves the clone's ref to it. `beforePush` is awaited
   * after each fetch, right before its push, and may reject to stop: the caller's fence (a lease
   * lost while the fetch ran must not put its "lease taken" commit after the next holder's).
   * @returns the new tip @throws remote_unavailable (also when the remote has no refs/heads/main),
   *   or what `beforePush` rejects with (nothing was pushed)
   */
  takeOver(gitdir: string, repoId: string, message: string, beforePush?: () => Promise<void>): Promise<string>;
  /**
   * Makes sure the remote exists with a refs/heads/main: a local-path remote is created with
   * `git init --bare`; an absent main gets a genesis commit (pushed only if still absent).
   * @returns whether this call created the genesis commit, and the remote's main
   */
  ensureRemote(gitdir: string, repoId: string): Promise<{ created: boolean; commitSha: string }>;
}

/**
 * Runs `git` with the user's and the system's configuration ignored; never throws on exit code.
 * A call killed at its time limit resolves as soon as git is gone (code -1), even while a
 * process git started (ssh) still holds its output open.
 */
export function runGit(args: readonly string[], opts: RunGitOptions): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, {
      env: {
        ...opts.env,
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_TERMINAL_PROMPT: "0",
        LC_ALL: "C",
        ...opts.extraEnv,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    let killed = false;
    let settled = false;
    const timer =
      opts.timeoutMs === undefined
        ? null
        : opts.timers.setTimeout(() => {
            killed = true;
            child.kill("SIGKILL");
          }, opts.timeoutMs);
    const finish = (code: number): void => {
      if (settled) return;
      settled = true;
      opts.timers.clearTimeout(timer);
      const stderr = Buffer.concat(err).toString("utf8");
      resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: killed ? `${stderr}killed after ${opts.timeoutMs} ms` : stderr });
    };
    child.on("error", (error) => {
      if (settled) return;
      settled = true;
      opts.timers.clearTimeout(timer);
      reject(error);
    });
    child.on("exit", () => {
      if (!killed) return;
      child.stdout.destroy();
      child.stderr.destroy();
      finish(-1);
    });
    child.on("close", (code) => finish(code ?? -1));
  });
}

/**
 * The commit refs/heads/main of a bare clone points to (its loose ref, else packed-refs; null
 * when absent), read without a git process: a takeover runs several, and each costs most of
 * what the takeover takes on a busy machine.
 */
async function readTip(gitdir: string): Promise<string | null> {
  const loose = (await readSmallTextOrEmpty(join(gitdir, DEFAULT_REF), MAX_REF_FILE_BYTES)).trim();
  if (/^[0-9a-f]{40}$/.test(loose)) return loose;
  const packed = await readSmallTextOrEmpty(join(gitdir, "packed-refs"), MAX_PACKED_REFS_BYTES);
  for (const line of packed.split("\n")) {
    const [sha = "", name] = line.split(" ");
    if (name === DEFAULT_REF && /^[0-9a-f]{40}$/.test(sha)) return sha;
  }
  return null;
}

/** Whether a remote URL names a folder on this machine (a path or file://). */
function localPath(url: string): string | null {
  if (url.startsWith("file://")) return decodeURIComponent(url.slice("file://".length));
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[^/]+@[^:]+:/.test(url) ? null : url;
}

export function createGitRemote(opts: GitRemoteOptions): GitRemote {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  const run = (args: readonly string[], extraEnv?: Record<string, string>): Promise<GitResult> =>
    runGit(args, { env: opts.env ?? process.env, timers: opts.timers, timeoutMs, ...(extraEnv === undefined ? {} : { extraEnv }) });
  const base = opts.remoteBase.replace(/\/+$/, "");
  // Clones are caches the host alone writes: no automatic gc repacking under the store.
  const config = ["-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "fetch.writeCommitGraph=false"];
  const git = (gitdir: string, args: readonly string[], env?: Record<string, string>): Promise<GitResult> =>
    run([...config, `--git-dir=${gitdir}`, ...args], env);
  const unavailable = (repoId: string, what: string, result: GitResult | null, cause?: unknown): WorkflowHostError =>
    new WorkflowHostError(
      "remote_unavailable",
      `${what} for deployment ${repoId} failed against ${remote.url(repoId)}: ${(result?.stderr ?? String(cause)).trim().split("\n").slice(-2).join(" / ") || `exit ${result?.code}`}`,
      { repoId, url: remote.url(repoId), code: result?.code ?? null },
      cause === undefined ? {} : { cause },
    );
  const commitEnv = (): Record<string, string> => {
    const date = `${Math.floor(opts.clock().getTime() / 1000)} +0000`;
    return {
      GIT_AUTHOR_NAME: opts.identity.name,
      GIT_AUTHOR_EMAIL: opts.identity.email,
      GIT_COMMITTER_NAME: opts.identity.name,
      GIT_COMMITTER_EMAIL: opts.identity.email,
      GIT_AUTHOR_DATE: date,
      GIT_COMMITTER_DATE: date,
    };
  };

  const remote: GitRemote = {
    url: (repoId) => `${base}/${repoId}.git`,

    async ensureClone(gitdir) {
      const dataDir = dirname(dirname(gitdir));
      const links = await findEscapingLinks(nodeFs, dataDir, gitdir, { repository: true });
      if (links.length > 0) {
        throw new WorkflowHostError("path_escapes_data_dir", `${links[0]} (in data dir ${dataDir}) is a symbolic link leading outside its clone's folder; git is not run on the clone; replace the link with the folder or file itself`, { path: links[0], dataDir, links: links.length });
      }
      if (existsSync(`${gitdir}/HEAD`)) return;
      await mkdir(gitdir, { recursive: true });
      const result = await run(["init", "--quiet", "--bare", "--initial-branch=main", gitdir]);
      if (result.code !== 0) throw new WorkflowHostError("io_failed", `git init --bare ${gitdir} failed: ${result.stderr.trim()}`, { gitdir });
    },

    async fetch(gitdir, repoId) {
      const result = await git(gitdir, ["fetch", "--quiet", "--no-tags", "--update-head-ok", "--no-write-fetch-head", remote.url(repoId), ...FETCH_REFSPECS]);
      if (result.code !== 0) throw unavailable(repoId, "git fetch", result);
    },

    async pushCas(gitdir, repoId, ref, from, to) {
      const result = await git(gitdir, ["push", "--porcelain", "--no-verify", `--force-with-lease=${ref}:${from ?? ""}`, remote.url(repoId), `${to}:${ref}`]);
      if (result.code === 0) return { accepted: true };
      // Porcelain: "!\t<src>:<dst>\t[rejected] (stale info)" for a lost compare-and-swap.
      const line = result.stdout.split("\n").find((l) => l.startsWith("!"));
      if (line !== undefined && /\[(rejected|remote rejected)\]/.test(line)) return { accepted: false, reason: line.split("\t").slice(2).join(" ").trim() };
      throw unavailable(repoId, "git push", result);
    },

    async takeOver(gitdir, repoId, message, beforePush) {
      for (let attempt = 1; ; attempt++) {
        await remote.fetch(gitdir, repoId);
        const tip = await readTip(gitdir);
        if (tip === null) throw unavailable(repoId, "reading refs/heads/main after fetch (the remote has none)", null);
        const made = await git(gitdir, ["commit-tree", `${tip}^{tree}`, "-p", tip, "-m", message], commitEnv());
        if (made.code !== 0) throw unavailable(repoId, "git commit-tree", made);
        const commit = made.stdout.trim();
        await beforePush?.();
        const pushed = await remote.pushCas(gitdir, repoId, DEFAULT_REF, tip, commit);
        if (pushed.accepted) {
          // Our own ref follows; a failure here (a store write holds the lock) is mended by the
          // next fetch, and a store commit on the old tip is refused by the remote anyway.
          await git(gitdir, ["update-ref", DEFAULT_REF, commit, tip]);
          return commit;
        }
        if (attempt >= 10) throw unavailable(repoId, `taking over (the remote kept moving: ${pushed.reason})`, null);
      }
    },

    async ensureRemote(gitdir, repoId) {
      const url = remote.url(repoId);
      const path = localPath(url);
      if (path !== null && !existsSync(path)) {
        await mkdir(path, { recursive: true });
        const init = await run(["init", "--quiet", "--bare", "--initial-branch=main", path]);
        if (init.code !== 0) throw unavailable(repoId, "git init --bare", init);
      }
      const lsRemote = async (): Promise<string | null> => {
        const listed = await run([...config, "ls-remote", url, DEFAULT_REF]);
        if (listed.code !== 0) throw unavailable(repoId, "git ls-remote", listed);
        return listed.stdout.trim().split(/\s/)[0] || null;
      };
      const existing = await lsRemote();
      if (existing !== null) return { created: false, commitSha: existing };
      await remote.ensureClone(gitdir);
      const tree = await git(gitdir, ["hash-object", "-t", "tree", "-w", "/dev/null"]);
      if (tree.code !== 0 || tree.stdout.trim() !== EMPTY_TREE) throw unavailable(repoId, "writing the empty tree", tree);
      const made = await git(gitdir, ["commit-tree", EMPTY_TREE, "-m", "genesis"], commitEnv());
      if (made.code !== 0) throw unavailable(repoId, "git commit-tree", made);
      const genesis = made.stdout.trim();
      const pushed = await remote.pushCas(gitdir, repoId, DEFAULT_REF, null, genesis);
      if (pushed.accepted) return { created: true, commitSha: genesis };
      // Another host created it first; its genesis is as good as ours.
      return { created: false, commitSha: (await lsRemote()) ?? genesis };
    },
  };
  return remote;
}
