/**
 * npm applies `overrides` only in the project being installed: the entry that keeps this
 * repository's `npm ci` free of engine warnings does nothing for a project that installs
 * workflow-host. An override that reaches a runtime dependency (one a consumer installs) must
 * therefore be spelled out in the README's "As a dependency" section, where a consumer can copy
 * it. (light-my-request's cookie was held at 1.1.1 here while every consumer on Node 20 got
 * cookie 2 and an EBADENGINE warning the README did not mention.)
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const read = (path: string): string => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), "utf8");
const pkg = JSON.parse(read("package.json")) as { overrides?: Record<string, unknown> };
const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { dev?: boolean }> };
const README = read("README.md");
const consumerSection = README.slice(README.indexOf("As a dependency"), README.indexOf("\n## "));

/** `[parent, dependency, version]` for each nested override whose parent a consumer installs. */
function runtimeOverrides(): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  for (const [parent, inner] of Object.entries(pkg.overrides ?? {})) {
    if (typeof inner !== "object" || inner === null) continue;
    const entry = lock.packages[`node_modules/${parent}`];
    if (entry === undefined || entry.dev === true) continue;
    for (const [dependency, version] of Object.entries(inner)) {
      if (typeof version === "string") out.push([parent, dependency, version]);
    }
  }
  return out;
}

describe("package.json overrides", () => {
  it("finds the override on a runtime dependency (light-my-request, through fastify)", () => {
    expect(runtimeOverrides().map(([parent]) => parent)).toContain("light-my-request");
  });

  it.each(runtimeOverrides())("the README gives consumers the %s → %s override", (parent, dependency, version) => {
    const compact = consumerSection.replace(/\s+/g, "");
    expect(compact).toContain(`"${parent}":{"${dependency}":"${version}"}`);
  });
});
