/**
 * What the README tells a reader to import exists where it says: every name its code blocks
 * import from `workflow-host` or one of its entries, every name the prose calls a "root export",
 * and every list of names it says come "from `workflow-host/<entry>`". (`previewCron` was
 * documented as a root export and was only in `workflow-host/internal`.)
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const README = readFileSync(fileURLToPath(new URL("../../README.md", import.meta.url)), "utf8");

const ENTRIES: Record<string, () => Promise<Record<string, unknown>>> = {
  "workflow-host": () => import("../../src/index.js"),
  "workflow-host/seams": () => import("../../seams/index.js"),
  "workflow-host/http": () => import("../../src/http/index.js"),
  "workflow-host/testing": () => import("../../src/testing/index.js"),
  "workflow-host/internal": () => import("../../src/internal.js"),
};

/** `[entry, name]` for each value the README says an entry exports. */
function documentedExports(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const block of README.matchAll(/^```(?:js|ts)\n([\s\S]*?)^```$/gm)) {
    for (const m of (block[1] as string).matchAll(/import\s*\{([^}]*)\}\s*from\s*"(workflow-host(?:\/\w+)?)"/g)) {
      for (const part of (m[1] as string).split(",")) {
        const name = part.trim();
        if (name !== "" && !name.startsWith("type ")) out.push([m[2] as string, name.split(/\s+as\s+/)[0] as string]);
      }
    }
  }
  for (const m of README.matchAll(/`(\w+)` \(root export\)/g)) out.push(["workflow-host", m[1] as string]);
  // "`a`, `b`, `c` (from `workflow-host/seams`)"
  for (const m of README.matchAll(/((?:`\w+`(?:, | and | or )?)+) \(from `(workflow-host(?:\/\w+)?)`\)/g)) {
    for (const name of (m[1] as string).matchAll(/`(\w+)`/g)) out.push([m[2] as string, name[1] as string]);
  }
  return out;
}

describe("the README's imports", () => {
  it("finds the names the README documents (a guard on the patterns above)", () => {
    const names = documentedExports().map(([entry, name]) => `${entry}:${name}`);
    expect(names).toContain("workflow-host:createWorkflowHost");
    expect(names).toContain("workflow-host:previewCron");
    expect(names).toContain("workflow-host/seams:releaseParked");
    expect(names).toContain("workflow-host/http:createHttpHandler");
  });

  it("each documented name is exported by the entry the README names", async () => {
    const missing: string[] = [];
    for (const [entry, name] of documentedExports()) {
      const load = ENTRIES[entry];
      if (load === undefined) {
        missing.push(`${entry} (no such entry)`);
        continue;
      }
      if ((await load())[name] === undefined) missing.push(`${name} from ${entry}`);
    }
    expect(missing).toEqual([]);
  });
});
