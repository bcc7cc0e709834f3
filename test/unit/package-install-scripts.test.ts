/**
 * Every locked package with an install script is reviewed in package.json's `allowScripts`
 * (true: it runs, false: it is skipped). npm 11 prints an "install scripts not yet covered by
 * allowScripts" warning after `npm ci` for each one that is not, and later npm releases skip
 * its script; `npm ci && npm start` printed that warning for esbuild.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const read = (path: string): string => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");
const pkg = JSON.parse(read("package.json")) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { version?: string; hasInstallScript?: boolean }> };

/** `name@version` of each locked package that has an install script. */
const withScripts = Object.entries(lock.packages)
  .filter(([path, entry]) => path !== "" && entry.hasInstallScript === true)
  .map(([path, entry]) => `${path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)}@${entry.version ?? ""}`);

describe("package.json allowScripts", () => {
  it("the lock has install scripts to review (esbuild's)", () => {
    expect(withScripts.some((id) => id.startsWith("esbuild@"))).toBe(true);
  });

  it.each(withScripts)("%s is reviewed, by name or by name@version", (id) => {
    const name = id.slice(0, id.lastIndexOf("@"));
    const allow = pkg.allowScripts ?? {};
    expect(typeof (allow[id] ?? allow[name])).toBe("boolean");
  });
});
