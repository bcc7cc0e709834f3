/**
 * `workflow-host/testing` needs memfs, an optional peer dependency a consumer may not have
 * installed. Importing it without memfs must say so with a typed error (`config_invalid`) and
 * the install command, not node's bare ERR_MODULE_NOT_FOUND from a file deep in dist/.
 * memfs is hidden from a child process by a resolve hook that looks it up from a folder with no
 * node_modules, so the failure is node's own.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { runTsScript } from "../../helpers/child-process.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-testing-no-memfs-");
const testingEntry = pathToFileURL(fileURLToPath(new URL("../../../src/testing/index.ts", import.meta.url))).href;

const HIDE_MEMFS = `
export async function resolve(specifier, context, nextResolve) {
  if (specifier === "memfs") return nextResolve(specifier, { ...context, parentURL: "file:///nonexistent-folder/consumer.mjs" });
  return nextResolve(specifier, context);
}
`;

describe("workflow-host/testing without memfs installed", () => {
  it("fails to import with config_invalid naming memfs and how to install it", async () => {
    const dir = await tempDir();
    const hooks = join(dir, "hide-memfs-hooks.mjs");
    await writeFile(hooks, HIDE_MEMFS);
    const script = join(dir, "import-testing.mts");
    await writeFile(
      script,
      `import { register } from "node:module";
register(${JSON.stringify(pathToFileURL(hooks).href)});
try {
  await import(${JSON.stringify(testingEntry)});
  console.log(JSON.stringify({ imported: true }));
} catch (error) {
  console.log(JSON.stringify({ name: error.name, code: error.code, message: error.message }));
}
`,
    );
    const child = await runTsScript(script, [], { timeoutMs: 60_000 });
    expect({ code: child.code, stderr: child.stderr }).toEqual({ code: 0, stderr: "" });
    const result = JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
    expect(result["name"]).toBe("WorkflowHostError");
    expect(result["code"]).toBe("config_invalid");
    expect(String(result["message"])).toContain("npm i -D memfs");
  });
});
