/**
 * `repo create` where a symbolic link already stands at the deployment's folder (or at
 * `deployments/` itself): refused with `path_escapes_data_dir`, as the store refuses a linked
 * deployment, and nothing is made where the link points. A dangling link is refused the same
 * way as one that resolves; it never surfaces as `io_failed`.
 */
import { existsSync } from "node:fs";
import { lstat, mkdir, readlink, symlink } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { dirSnapshot } from "../../helpers/dir-snapshot.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-repo-create-links-");

async function refused(dataDir: string, linkAt: string): Promise<void> {
  const run = await runCli(["repo", "create", "-d", dataDir, "-r", "dep", "--json"]);
  expect(run.code).toBe(1);
  expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe("path_escapes_data_dir");
  expect(run.stderr).toMatch(/^workflow-host: path_escapes_data_dir: /);
  // The link is left as it was.
  expect((await lstat(linkAt)).isSymbolicLink()).toBe(true);
}

describe("repo create over a link", () => {
  for (const [name, target] of [
    ["a dangling link leading outside the data dir", (root: string) => join(root, "outside", "dep.git")],
    ["a dangling link leading inside the data dir", () => "../elsewhere.git"],
  ] as const) {
    it(`at deployments/<id>.git, ${name}: path_escapes_data_dir, nothing made through it`, async () => {
      const root = await tempDir();
      const dataDir = join(root, "data");
      await mkdir(join(dataDir, "deployments"), { recursive: true });
      await mkdir(join(root, "outside"));
      const linkAt = join(dataDir, "deployments", "dep.git");
      await symlink(target(root), linkAt);
      const before = await dirSnapshot(root);
      await refused(dataDir, linkAt);
      expect(await readlink(linkAt)).toBe(target(root));
      expect(existsSync(join(root, "outside", "dep.git"))).toBe(false);
      expect(existsSync(join(dataDir, "deployments", "elsewhere.git"))).toBe(false);
      expect(await dirSnapshot(root)).toEqual(before);
    });
  }

  it("at deployments/<id>.git leading to an empty folder outside: path_escapes_data_dir, nothing written there", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    await mkdir(join(dataDir, "deployments"), { recursive: true });
    await mkdir(join(root, "outside"));
    const linkAt = join(dataDir, "deployments", "dep.git");
    await symlink(join(root, "outside"), linkAt);
    await refused(dataDir, linkAt);
    expect(await dirSnapshot(join(root, "outside"))).toEqual([]);
  });

  it("at deployments/ itself, dangling: path_escapes_data_dir, nothing made through it", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    await mkdir(dataDir);
    const linkAt = join(dataDir, "deployments");
    await symlink(join(root, "gone"), linkAt);
    await refused(dataDir, linkAt);
    expect(existsSync(join(root, "gone"))).toBe(false);
  });

  it("a dangling link at deployments/<id>.git is no missing deployment: timers and check name it and exit 1", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    await mkdir(join(dataDir, "deployments"), { recursive: true });
    await symlink(join(root, "gone.git"), join(dataDir, "deployments", "dep.git"));
    const timers = await runCli(["timers", "-d", dataDir, "--json"]);
    expect(timers.code).toBe(1);
    expect((JSON.parse(timers.stdout) as { failedRepos: { repoId: string; code: string }[] }).failedRepos).toEqual([{ repoId: "dep", code: "path_escapes_data_dir", message: expect.any(String) }]);
    const check = await runCli(["check", "-d", dataDir, "--json"]);
    expect(check.code).toBe(1);
    expect((JSON.parse(check.stdout) as { problems: { repoId: string; code: string }[] }).problems).toMatchObject([{ repoId: "dep", code: "path_escapes_data_dir" }]);
  });
});
