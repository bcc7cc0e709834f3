/**
 * A data dir whose deployments cannot be read is never shown as a healthy or empty one:
 * `repo list` names a deployment folder that is a dangling link or a link leading out of the data
 * dir (`path_escapes_data_dir`, exit 1, as `timers` and `check` do), and a `deployments` that is
 * a file is `io_failed` (errno ENOTDIR) for every command that lists deployments, never "0
 * deployments". The commands run through the CLI's in-process entry (the same `main` a child
 * runs, without its start-up); `serve` runs in a child process, which can be killed if a
 * regression made it start serving.
 */
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { cliInProcess, runCliProcess } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-cli-unreadable-");

/** A data dir with one healthy deployment and `link.git` a symbolic link to `target`. */
async function dataDirWithLink(target: (root: string) => Promise<string>): Promise<string> {
  const root = await tempDir();
  const dataDir = join(root, "data");
  expect((await cliInProcess(["repo", "create", "-d", dataDir, "-r", "good"])).code).toBe(0);
  await symlink(await target(root), join(dataDir, "deployments", "link.git"));
  return dataDir;
}

const dangling = async (root: string): Promise<string> => join(root, "gone.git");
const outside = async (root: string): Promise<string> => {
  const gitdir = join(root, "elsewhere", "x.git");
  await mkdir(gitdir, { recursive: true });
  await gitAt(gitdir, ["init", "--bare", "--quiet"]);
  return gitdir;
};

interface RepoListJson {
  repos: { repoId: string }[];
  failedRepos: { repoId: string; gitdir: string; code: string }[];
}

describe("repo list with a deployment folder that is a symbolic link it must not follow", () => {
  it.each([
    ["dangling", dangling],
    ["leading out of the data dir", outside],
  ])("names the %s link as unreadable (path_escapes_data_dir), lists the others, exit 1 (JSON)", async (_, target) => {
    const dataDir = await dataDirWithLink(target);
    const run = await cliInProcess(["repo", "list", "-d", dataDir, "--json"]);
    expect(run.code).toBe(1);
    const body = JSON.parse(run.stdout) as RepoListJson;
    expect(body.repos.map((r) => r.repoId)).toEqual(["good"]);
    expect(body.failedRepos.map((f) => [f.repoId, f.code])).toEqual([["link", "path_escapes_data_dir"]]);
    expect(body.failedRepos[0]?.gitdir).toBe(join(dataDir, "deployments", "link.git"));
  });

  it.each([
    ["dangling", dangling],
    ["leading out of the data dir", outside],
  ])("names the %s link on stderr and on stdout, exit 1 (text)", async (_, target) => {
    const dataDir = await dataDirWithLink(target);
    const run = await cliInProcess(["repo", "list", "-d", dataDir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: path_escapes_data_dir: /m);
    expect(run.stdout).toMatch(/^good {2}\S+good\.git$/m);
    expect(run.stdout).toMatch(/1 deployment could not be read: link/);
  });
});

describe("a data dir whose deployments is a plain file", () => {
  async function dataDirWithFile(): Promise<string> {
    const dataDir = join(await tempDir(), "data");
    await mkdir(dataDir);
    await writeFile(join(dataDir, "deployments"), "not a folder\n");
    return dataDir;
  }

  it.each(["repo list", "timers", "check"])("%s: io_failed (ENOTDIR), exit 1, never 0 deployments", async (command) => {
    const dataDir = await dataDirWithFile();
    const run = await cliInProcess([...command.split(" "), "-d", dataDir, "--json"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: io_failed: .*ENOTDIR/m);
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe("io_failed");
  });

  it("serve: io_failed (ENOTDIR) before it takes the lock, exit 1", async () => {
    const dataDir = await dataDirWithFile();
    const run = await runCliProcess(["serve", "-d", dataDir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: io_failed: .*ENOTDIR/m);
  });
});

describe("the store under those commands (and under a host)", () => {
  it("listRepos throws io_failed (ENOTDIR) for a deployments file instead of listing none", async () => {
    const dataDir = join(await tempDir(), "data");
    await mkdir(dataDir);
    await writeFile(join(dataDir, "deployments"), "not a folder\n");
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const error = await store.listRepos(null, WORKFLOW_RUN_KIND).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "io_failed", data: { errno: "ENOTDIR", cause: "not_a_folder" } });
    } finally {
      await store.close();
    }
  });
});
