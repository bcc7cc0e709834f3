/**
 * The ref sampler reads a ref as git does: a ref that `git gc --auto` (run by `git push`) or
 * `git pack-refs` moved from its loose file into packed-refs is whole, not torn. Only a loose
 * file holding anything but 40 hex digits and a newline, or a ref found nowhere, is torn.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess } from "../host/cli-child.js";
import { startRefSampler } from "./ref-sampler.js";

const tempDir = useTempDirs("wfh-ref-sampler-");

describe("ref sampler", () => {
  it("reads a ref packed into packed-refs as whole, and a truncated loose ref as torn", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await cliInProcess(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    const gitdir = join(dataDir, "deployments", "dep.git");
    const refPath = join(gitdir, "refs", "heads", "main");
    const tip = (await gitAt(gitdir, ["rev-parse", "refs/heads/main"])).trim();
    // What gc --auto does to refs: into packed-refs, loose file removed. stop() reads once more.
    await gitAt(gitdir, ["pack-refs", "--all", "--prune"]);
    const packed = startRefSampler(refPath).stop();
    expect(packed.torn).toEqual([]);
    expect(packed.values.map((v) => v.value)).toEqual([tip]);
    await writeFile(refPath, "");
    expect(startRefSampler(refPath).stop().torn.map((t) => t.bytes)).toEqual(["", ""]);
  });
});
