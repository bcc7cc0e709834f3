import { describe, expect, it } from "vitest";
import { parsePackedRefs } from "../../../src/substrate/ref-store.js";

const A = "a".repeat(40);
const B = "b".repeat(40);

function codeAndLine(text: string): unknown {
  try {
    parsePackedRefs("/repo.git/packed-refs", text);
    return "parsed";
  } catch (error) {
    const e = error as { code?: string; data?: { line?: number } };
    return { code: e.code, line: e.data?.line };
  }
}

describe("packed-refs is read as strictly as git reads it", () => {
  it("reads git's own format: the header, ref lines, peeled tag lines", () => {
    const refs = parsePackedRefs("/repo.git/packed-refs", `# pack-refs with: peeled fully-peeled sorted \n${A} refs/heads/main\n${B} refs/tags/v1\n^${A}\n`);
    expect([...refs]).toEqual([
      ["refs/heads/main", A],
      ["refs/tags/v1", B],
    ]);
    expect(parsePackedRefs("/repo.git/packed-refs", "").size).toBe(0);
  });

  it.each([
    ["a garbage line", `${A} refs/heads/main\ngarbage\n`, 2],
    ["a truncated oid", `${A.slice(0, 20)} refs/heads/main\n`, 1],
    ["an unterminated last line", `${A} refs/heads/main`, 1],
    ["a header that is not first", `${A} refs/heads/main\n# pack-refs with: peeled\n`, 2],
    ["a peeled line after nothing", `^${A}\n${A} refs/heads/main\n`, 1],
    ["a name git refuses", `${A} refs/heads/../../x\n`, 1],
    ["a name outside refs/", `${A} HEAD\n`, 1],
    ["an empty line in the middle", `${A} refs/heads/main\n\n${B} refs/heads/b\n`, 2],
  ])("%s is ref_corrupt naming its line", (_label, text, line) => {
    expect(codeAndLine(text)).toEqual({ code: "ref_corrupt", line });
  });
});
