import { describe, expect, it } from "vitest";
import { normalizeRefName } from "../../../src/substrate/ref-name.js";
import { parseFolderPath, parseRepoPath } from "../../../src/substrate/repo-path.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return undefined;
}

describe("repository path rules", () => {
  it.each([
    "",
    "/a",
    "a/",
    "a//b",
    ".",
    "a/./b",
    "..",
    "a/../b",
    ".git",
    "x/.GIT/config",
    ".Git ",
    ".git.",
    "GIT~1/x",
    ".g\u200cit/x",
    "a\\b",
    "C:\\x",
    "run\u0000x",
  ])("rejects %j with path_violation", (path) => {
    expect(codeOf(() => parseRepoPath(path))).toBe("path_violation");
  });

  it("accepts ordinary paths and folder forms", () => {
    expect(parseRepoPath("runs/r1/events/3.json")).toEqual(["runs", "r1", "events", "3.json"]);
    expect(parseRepoPath(".hidden/x.gitignore")).toEqual([".hidden", "x.gitignore"]);
    expect(parseFolderPath("")).toEqual([]);
    expect(parseFolderPath("runs/r1/")).toEqual(["runs", "r1"]);
    expect(codeOf(() => parseFolderPath("runs//"))).toBe("path_violation");
  });

  it("expands and checks ref names like git check-ref-format", () => {
    expect(normalizeRefName("main")).toBe("refs/heads/main");
    expect(normalizeRefName("refs/heads/main")).toBe("refs/heads/main");
    expect(normalizeRefName("HEAD")).toBe("HEAD");
    for (const bad of ["", "../x", "refs/heads/../../x", "a b", "x.lock", "refs//x", "a~1", "a@{1}", ".x"]) {
      expect(codeOf(() => normalizeRefName(bad))).toBe("path_violation");
    }
  });
});
