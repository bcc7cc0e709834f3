/**
 * Commits made and pushed by the real `git` CLI into a deployment a host serves, the way a
 * workflow runtime elsewhere (or a careless person) adds to a log. Commits are built with
 * `git fast-import` in a bare clone, so entries the file system cannot hold are possible too:
 * symlinks with any target, names longer than 255 bytes, a folder where an event file should be.
 * A push that loses the race with the host (non-fast-forward) is rebuilt on the new tip and
 * pushed again, as a person would after `git pull`.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { git, runGit } from "../../helpers/git-cli.js";

/** One entry to add (or, with `delete`, remove) in the pushed commit. */
export interface PushedEntry {
  readonly path: string;
  readonly bytes?: Uint8Array | string;
  /**
   * Git file mode: a regular file (default), an executable, a symlink (bytes = its target) or a
   * gitlink (bytes = the submodule commit's 40-hex id, which need not exist here).
   */
  readonly mode?: "100644" | "100755" | "120000" | "160000";
  readonly delete?: boolean;
}

export interface GitPusher {
  /** The bare clone's git dir. */
  readonly gitdir: string;
  /**
   * Builds one commit on the current tip of the origin's main holding `entries` (computed from
   * the tip when given a function, again after every lost race) and pushes it.
   * @returns the pushed commit and how many pushes it took
   */
  push(entries: readonly PushedEntry[] | ((tip: TipView) => Promise<readonly PushedEntry[]>), message: string, opts?: { maxAttempts?: number }): Promise<{ commit: string; attempts: number }>;
  close(): Promise<void>;
}

/** Every push of one commit lost the race with other writers. */
export class PushStarvedError extends Error {
  constructor(readonly attempts: number) {
    super(`git push lost the race with other writers ${attempts} times in a row`);
  }
}

/** The receiving repository refused the commit itself (`receive.fsckObjects`): not a race. */
export class PushRefusedError extends Error {
  constructor(readonly stderr: string) {
    super(`git push was refused by the receiving repository: ${stderr.trim().slice(0, 300)}`);
  }
}

/** The tip a commit is being built on. */
export interface TipView {
  readonly tip: string;
  /** Names in a folder at the tip ([] when there is no such folder). */
  names(folder: string): Promise<string[]>;
}

/** Opens a bare clone of `origin` (a bare repository path) to push from. */
export async function openGitPusher(origin: string): Promise<GitPusher> {
  const scratch = await mkdtemp(join(tmpdir(), "wfh-pusher-"));
  const gitdir = join(scratch, "clone.git");
  await git(["clone", "--quiet", "--bare", origin, gitdir]);
  const at = (args: readonly string[]) => git([`--git-dir=${gitdir}`, ...args]);

  const fetchTip = async (): Promise<string> => {
    await at(["fetch", "--quiet", "origin", "+refs/heads/main:refs/heads/main"]);
    // FETCH_HEAD names what was fetched, whether or not the local ref had to move.
    return (await readFile(join(gitdir, "FETCH_HEAD"), "utf8")).slice(0, 40);
  };

  // One `git fast-import` builds blobs, trees and the commit on top of `tip`: a push that lost
  // the race is rebuilt in a few milliseconds, so it has a fair chance against busy writers.
  const build = async (tip: string, entries: readonly PushedEntry[], message: string): Promise<string> => {
    const chunks: Buffer[] = [];
    const text = (line: string): void => void chunks.push(Buffer.from(line, "utf8"));
    const data = (bytes: Uint8Array | string): void => {
      const buf = typeof bytes === "string" ? Buffer.from(bytes, "utf8") : Buffer.from(bytes);
      text(`data ${buf.length}\n`);
      chunks.push(buf);
      text("\n");
    };
    text("commit refs/heads/outgoing\n");
    text(`committer git-cli <git-cli@example.com> ${Math.floor(Date.now() / 1_000)} +0000\n`);
    data(message);
    text(`from ${tip}\n`);
    for (const entry of entries) {
      const path = quotePath(entry.path);
      if (entry.delete === true) {
        text(`D ${path}\n`);
        continue;
      }
      if (entry.mode === "160000") {
        text(`M 160000 ${Buffer.from(entry.bytes ?? "").toString("utf8").trim()} ${path}\n`);
        continue;
      }
      text(`M ${entry.mode ?? "100644"} inline ${path}\n`);
      data(entry.bytes ?? "");
    }
    text("\n");
    const imported = await runGit([`--git-dir=${gitdir}`, "fast-import", "--quiet", "--force"], { input: Buffer.concat(chunks) });
    if (imported.code !== 0) throw new Error(`git fast-import refused the commit: ${imported.stderr.trim().slice(0, 500)}`);
    return (await readFile(join(gitdir, "refs", "heads", "outgoing"), "utf8")).trim();
  };

  return {
    gitdir,
    async push(entries, message, opts = {}) {
      const maxAttempts = opts.maxAttempts ?? 50;
      for (let attempt = 1; ; attempt += 1) {
        const tip = await fetchTip();
        const view: TipView = {
          tip,
          names: async (folder) => {
            const listed = await runGit([`--git-dir=${gitdir}`, "ls-tree", "--name-only", `${tip}:${folder}`]);
            return listed.code === 0 ? listed.stdout.split("\n").filter(Boolean) : [];
          },
        };
        const list = typeof entries === "function" ? await entries(view) : entries;
        const commit = await build(tip, list, message);
        const pushed = await runGit([`--git-dir=${gitdir}`, "push", "--quiet", "origin", `${commit}:refs/heads/main`]);
        if (pushed.code === 0) return { commit, attempts: attempt };
        if (/unpacker error|fsck error/i.test(pushed.stderr)) throw new PushRefusedError(pushed.stderr);
        // Lost the race with another writer: rebuild on the new tip, as after a pull.
        if (!/rejected|non-fast-forward|fetch first|failed to update ref|cannot lock ref/i.test(pushed.stderr)) {
          throw new Error(`git push failed (attempt ${attempt}): ${pushed.stderr.trim()}`);
        }
        if (attempt >= maxAttempts) throw new PushStarvedError(attempt);
      }
    },
    async close() {
      await rm(scratch, { recursive: true, force: true });
    },
  };
}

/** A path as fast-import reads it: C-quoted when it starts with a quote or holds a newline. */
function quotePath(path: string): string {
  if (!path.startsWith('"') && !path.includes("\n")) return path;
  return JSON.stringify(path);
}
