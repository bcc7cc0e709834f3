/**
 * The command as a project that installed the package runs it: the built code under
 * `node_modules/workflow-host`, started with `npx workflow-host`. The demo's closing hint must
 * then say `npx workflow-host …` (it said `npm run cli -- …`, which only this repository has).
 */
import { cp, mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCommand } from "../../helpers/child-process.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { REPO_ROOT } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-installed-");

function run(command: string, args: readonly string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCommand(command, args, { cwd, env: { ...process.env, WORKFLOW_HOST_DATA_DIR: "" } });
}

/** A project folder with the package installed as npm lays it out (dependencies linked from this repository). */
async function projectWithPackage(): Promise<string> {
  const project = await tempDir();
  const pkgDir = join(project, "node_modules", "workflow-host");
  await mkdir(pkgDir, { recursive: true });
  const built = await run(process.execPath, [join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json", "--outDir", join(pkgDir, "dist")], REPO_ROOT);
  expect(built.stdout + built.stderr).toBe("");
  await cp(join(REPO_ROOT, "bin"), join(pkgDir, "bin"), { recursive: true });
  await cp(join(REPO_ROOT, "package.json"), join(pkgDir, "package.json"));
  await symlink(join(REPO_ROOT, "node_modules"), join(pkgDir, "node_modules"));
  await mkdir(join(project, "node_modules", ".bin"));
  await symlink("../workflow-host/bin/workflow-host.js", join(project, "node_modules", ".bin", "workflow-host"));
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "shop", version: "1.0.0", private: true, dependencies: { "workflow-host": "0.1.0" } }));
  return project;
}

describe("workflow-host installed in a project", () => {
  it("npx workflow-host demo ends with hints that start with npx workflow-host", async () => {
    const project = await projectWithPackage();
    const demo = await run("npx", ["--no", "workflow-host", "demo", "--data-dir", "./demo"], project);
    expect(demo.code).toBe(0);
    expect(demo.stdout).toContain("\n  npx workflow-host timers --data-dir ./demo\n");
    expect(demo.stdout).not.toContain("npm run cli");
  }, 180_000);

  it("exports workflow-host/package.json, which tools read (require, import with type json)", async () => {
    const project = await tempDir();
    const pkgDir = join(project, "node_modules", "workflow-host");
    await mkdir(pkgDir, { recursive: true });
    await cp(join(REPO_ROOT, "package.json"), join(pkgDir, "package.json"));
    await writeFile(
      join(project, "read-version.mjs"),
      `import { createRequire } from "node:module";
const required = createRequire(import.meta.url)("workflow-host/package.json");
const imported = (await import("workflow-host/package.json", { with: { type: "json" } })).default;
console.log(JSON.stringify({ required: required.version, imported: imported.name + "@" + imported.version }));
`,
    );
    const read = await run(process.execPath, ["read-version.mjs"], project);
    expect({ code: read.code, stderr: read.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(read.stdout)).toEqual({ required: "0.1.0", imported: "workflow-host@0.1.0" });
  }, 60_000);

  it("a copy without dist/ (a clone's folder installed unbuilt) says to build it, with no stack trace", async () => {
    const project = await tempDir();
    const pkgDir = join(project, "node_modules", "workflow-host");
    await mkdir(pkgDir, { recursive: true });
    await cp(join(REPO_ROOT, "bin"), join(pkgDir, "bin"), { recursive: true });
    await cp(join(REPO_ROOT, "package.json"), join(pkgDir, "package.json"));
    const help = await run(process.execPath, [join(pkgDir, "bin", "workflow-host.js"), "--help"], project);
    expect(help.code).toBe(1);
    expect(help.stdout).toBe("");
    expect(help.stderr).toMatch(/^workflow-host: /);
    expect(help.stderr).toContain("npm run build");
    expect(help.stderr).not.toMatch(/\n\s+at /);
  }, 60_000);
});
