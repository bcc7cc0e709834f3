/**
 * A cluster host clears the ref locks a killed writer left in its clones at start, and records
 * its instance id: with raw file-system calls, so links below the data dir must be judged by
 * hand. A link in a clone leading outside it must not have a file outside removed.
 */
import { cp, mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { takeCloneDir } from "../../../seams/cluster/clone-dir.js";
import { createGitRemote } from "../../../seams/cluster/git-remote.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-clone-dir-");
const identity = { name: "workflow-host test.1", email: "test@workflow-host" };
const baseEnv = { PATH: process.env["PATH"] ?? "/usr/bin:/bin" };

describe("takeCloneDir with links in a clone", () => {
  for (const [name, linked] of [
    ["refs", "refs"],
    ["refs/heads", "refs/heads"],
    ["refs/consumers", "refs/consumers"],
    ["the clone's folder itself", "."],
  ] as const) {
    it(`at ${name}: no lock file is removed through it`, async () => {
      const dataDir = await tempDir();
      const deployments = join(dataDir, "deployments");
      const clone = join(deployments, "dep-1.git");
      const outside = await tempDir();
      // What the link leads to: a folder shaped like the clone's, holding files named like locks.
      const target = join(outside, "target");
      const shaped = linked === "." ? "" : linked;
      const within = (path: string): string => join(target, path.startsWith(`${shaped}/`) ? path.slice(shaped.length + 1) : shaped === "" ? path : "");
      await mkdir(linked === "." ? deployments : clone, { recursive: true });
      const files = ["refs/heads/main.lock", "packed-refs.lock", "HEAD.lock", "refs/consumers/c.lock"].filter((p) => shaped === "" || p.startsWith(`${shaped}/`));
      for (const file of files) {
        await mkdir(join(within(file), ".."), { recursive: true });
        await writeFile(within(file), "outside, not ours");
      }
      const at = linked === "." ? clone : join(clone, linked);
      await mkdir(join(at, ".."), { recursive: true });
      await symlink(target, at);
      await takeCloneDir(deployments, "me");
      for (const file of files) expect(await readFile(within(file), "utf8")).toBe("outside, not ours");
    });
  }

  it("at the deployments folder itself: refused (path_escapes_data_dir), nothing removed or written through it", async () => {
    const dataDir = await tempDir();
    const outside = await tempDir();
    await mkdir(join(outside, "dep-1.git", "refs", "heads"), { recursive: true });
    await writeFile(join(outside, "dep-1.git", "refs", "heads", "main.lock"), "outside, not ours");
    await symlink(outside, join(dataDir, "deployments"));
    await expect(takeCloneDir(join(dataDir, "deployments"), "me")).rejects.toMatchObject({ code: "path_escapes_data_dir" });
    expect(await readFile(join(outside, "dep-1.git", "refs", "heads", "main.lock"), "utf8")).toBe("outside, not ours");
    await expect(readFile(join(outside, ".cluster-instance"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("still clears the locks of a clone without links", async () => {
    const dataDir = await tempDir();
    const deployments = join(dataDir, "deployments");
    const clone = join(deployments, "dep-1.git");
    await mkdir(join(clone, "refs", "heads"), { recursive: true });
    await writeFile(join(clone, "refs", "heads", "main.lock"), "x");
    await takeCloneDir(deployments, "me");
    await expect(readFile(join(clone, "refs", "heads", "main.lock"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("git remote: a clone with a link leading outside it", () => {
  for (const linked of ["refs", "objects", "refs/heads"] as const) {
    it(`at ${linked}: ensureClone refuses it (path_escapes_data_dir) before git writes anything there`, async () => {
      const dataDir = await tempDir();
      const fake = createFakeClock("2030-01-02T03:04:05.000Z");
      const remote = createGitRemote({ remoteBase: join(dataDir, "remotes"), identity, clock: fake.clock, timers: fake.timers, env: baseEnv });
      const gitdir = join(dataDir, "deployments", "d1.git");
      await remote.ensureRemote(gitdir, "d1");
      const outside = join(await tempDir(), "elsewhere");
      await cp(join(gitdir, linked), outside, { recursive: true });
      await rm(join(gitdir, linked), { recursive: true });
      await symlink(outside, join(gitdir, linked));
      await expect(remote.ensureClone(gitdir)).rejects.toMatchObject({ code: "path_escapes_data_dir" });
    });
  }

  it("a clone folder that is a link into another clone is refused", async () => {
    const dataDir = await tempDir();
    const fake = createFakeClock("2030-01-02T03:04:05.000Z");
    const remote = createGitRemote({ remoteBase: join(dataDir, "remotes"), identity, clock: fake.clock, timers: fake.timers, env: baseEnv });
    await remote.ensureRemote(join(dataDir, "deployments", "d2.git"), "d2");
    await symlink("d2.git", join(dataDir, "deployments", "d1.git"));
    await expect(remote.ensureClone(join(dataDir, "deployments", "d1.git"))).rejects.toMatchObject({ code: "path_escapes_data_dir" });
  });

  it("a clone without links is used as before", async () => {
    const dataDir = await tempDir();
    const fake = createFakeClock("2030-01-02T03:04:05.000Z");
    const remote = createGitRemote({ remoteBase: join(dataDir, "remotes"), identity, clock: fake.clock, timers: fake.timers, env: baseEnv });
    const gitdir = join(dataDir, "deployments", "d1.git");
    await remote.ensureRemote(gitdir, "d1");
    await remote.ensureClone(gitdir);
    expect(await remote.takeOver(gitdir, "d1", "taken")).toMatch(/^[0-9a-f]{40}$/);
  });
});
