/**
 * The documents the package ships name only files the package ships: a consumer reading the
 * README under `node_modules/workflow-host` (or on the registry's page, which renders the packed
 * README) follows its links and images into the package, not into this repository. The file
 * list is npm's own (`npm pack --dry-run --json`, without the build: `dist/` is not looked at).
 */
import { readFile } from "node:fs/promises";
import { join, normalize } from "node:path";
import { describe, expect, it } from "vitest";
import { runCommand } from "../../helpers/child-process.js";
import { REPO_ROOT } from "../host/cli-child.js";

/** Paths the packed Markdown refers to: relative link and image targets, and `docs/…` named in code spans. */
function referencesOf(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = (match[1] as string).split("#")[0] as string;
    if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    found.push(normalize(join(file, "..", target)));
  }
  for (const match of text.matchAll(/`(docs\/[A-Za-z0-9._/-]+)`/g)) found.push(normalize(match[1] as string));
  return found;
}

describe("the packed documents", () => {
  it("name only files the package holds", async () => {
    const packed = await runCommand("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: REPO_ROOT });
    expect(packed.code).toBe(0);
    const files = new Set<string>((JSON.parse(packed.stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? []);
    const documents = [...files].filter((path) => path.endsWith(".md"));
    expect(documents).toContain("README.md");
    const missing: string[] = [];
    for (const document of documents) {
      for (const reference of referencesOf(document, await readFile(join(REPO_ROOT, document), "utf8"))) {
        if (!files.has(reference)) missing.push(`${document} → ${reference}`);
      }
    }
    expect(missing).toEqual([]);
  }, 60_000);
});
