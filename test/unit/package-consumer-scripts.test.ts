/**
 * A project that installs the packed tarball runs none of our scripts, so npm's install-script
 * review (npm 11: "install scripts not yet covered by allowScripts") has nothing of ours to list:
 * `dist/` is built by `prepack` (npm pack, npm publish), never by `prepare`, which npm lists for the
 * tarball's consumers. An install from a git URL runs only `prepare` and so gets no `dist/`; the
 * README says so and gives the tarball route, and bin/ says so when dist/ is missing.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const pkg = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8")) as { scripts: Record<string, string> };

describe("package.json scripts a consumer meets", () => {
  it.each(["preinstall", "install", "postinstall", "prepare"])("has no %s script", (name) => {
    expect(pkg.scripts[name]).toBeUndefined();
  });

  it("builds dist/ whenever the package is packed (prepack)", () => {
    expect(pkg.scripts["prepack"]).toBe("npm run build");
  });

  it("runs the demo and the tests from the sources, with no build step", () => {
    expect(pkg.scripts["start"]).toMatch(/^node --import tsx src\/cli\/main\.ts demo$/);
    expect(pkg.scripts["test"]).not.toMatch(/build/);
  });
});
