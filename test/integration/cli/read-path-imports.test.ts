/**
 * What `workflow-host timers` (a command that only reads) loads before it prints: the static
 * import closure of the modules it runs (the CLI entry, the command, the store it opens, the
 * listing it calls), read from the sources. Loading arktype (its keyword scopes are built at
 * import), isomorphic-git or chokidar on this path cost more than the start-up budget of a read
 * command (issue 12: `timers` ≤ 4× a bare node start).
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Static value imports of a module (type-only imports and `import()` are not loaded with it). */
function staticImports(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^;"']*?\sfrom\s+)?["']([^"']+)["']/g;
  for (let m = pattern.exec(source); m !== null; m = pattern.exec(source)) {
    if (m[2] !== undefined) continue;
    found.push(m[3] as string);
  }
  return found;
}

/** Packages the static closure of `entries` loads. */
function packagesLoadedBy(entries: readonly string[]): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const queue = entries.map((e) => join(root, e));
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of staticImports(readFileSync(file, "utf8"))) {
      if (spec.startsWith(".")) queue.push(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
      else if (!spec.startsWith("node:")) packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : (spec.split("/")[0] as string));
    }
  }
  return packages;
}

describe("the read path of the command line", () => {
  it("loads neither arktype nor isomorphic-git nor chokidar for `timers`", () => {
    const loaded = packagesLoadedBy([
      "src/cli/main.ts",
      "src/cli/commands/timers.ts",
      "src/host/open-workflow-store.ts",
      "src/host/list-pending-timers.ts",
    ]);
    expect([...loaded].filter((p) => p === "arktype" || p === "isomorphic-git" || p === "chokidar")).toEqual([]);
  });

  it("sees the packages a module does import statically", () => {
    // The walker itself: the published schemas still load arktype.
    expect(packagesLoadedBy(["src/workflow/event-schemas.ts"]).has("arktype")).toBe(true);
  });
});
