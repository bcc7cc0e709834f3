/**
 * A folder under deployments/ whose name is no `<repoId>.git` is not a deployment: `repo list`
 * and `check` still serve the others and say once which folders they passed over.
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-ignored-");
const clock = (): Date => new Date("2026-05-01T10:00:00.000Z");

async function dataDirWithStrays(): Promise<string> {
  const dataDir = join(await tempDir(), "data");
  expect((await runCli(["repo", "create", "-d", dataDir, "-r", "dep"], { clock })).code).toBe(0);
  for (const name of ["bad name.git", "x.y.git", "notes"]) await mkdir(join(dataDir, "deployments", name));
  return dataDir;
}

describe("folders under deployments/ that are not deployments", () => {
  it("repo list lists the deployments, names the others in `ignored` and on one stderr line, exit 0", async () => {
    const dataDir = await dataDirWithStrays();
    const asJson = await runCli(["repo", "list", "-d", dataDir, "--json"], { clock });
    expect(asJson.code).toBe(0);
    const body = JSON.parse(asJson.stdout) as { repos: { repoId: string }[]; ignored: string[] };
    expect(body.repos.map((r) => r.repoId)).toEqual(["dep"]);
    expect(body.ignored).toEqual(["bad name.git", "notes", "x.y.git"]);
    const text = await runCli(["repo", "list", "-d", dataDir], { clock });
    expect(text.code).toBe(0);
    expect(text.stderr.trim().split("\n")).toHaveLength(1);
    expect(text.stderr).toContain("x.y.git");
  });

  it("check reports them and still passes (exit 0)", async () => {
    const dataDir = await dataDirWithStrays();
    const asJson = await runCli(["check", "-d", dataDir, "--json"], { clock });
    expect(asJson.code).toBe(0);
    expect((JSON.parse(asJson.stdout) as { ignored: string[] }).ignored).toEqual(["bad name.git", "notes", "x.y.git"]);
  });
});
