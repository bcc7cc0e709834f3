import { describe, expect, it } from "vitest";
import { DuplicateJsonKeyError, parseJsonText } from "../../src/config-json.js";

describe("parseJsonText", () => {
  it("parses what JSON.parse parses, a leading byte order mark skipped", () => {
    expect(parseJsonText('\ufeff{"a":[1,{"a":2}],"b":"{\\"a\\":1,\\"a\\":2}"}')).toEqual({ a: [1, { a: 2 }], b: '{"a":1,"a":2}' });
    expect(parseJsonText('"x"')).toBe("x");
    expect(() => parseJsonText("{")).toThrow(SyntaxError);
  });

  it("refuses a key given twice in one object, however it is escaped, naming where", () => {
    const cases: Array<[string, string, readonly (string | number)[]]> = [
      ['{"a":1,"a":2}', "a", []],
      ['{"a\\u0062":1,"ab":2}', "ab", []],
      ['[{"x":1},{"c":[{"k":1,"k\\"":3,"k":2}]}]', "k", [1, "c", 0]],
      ['{"tokens":{"t-1":{"deployments":{"p":["read"],"p":["write"]}}}}', "p", ["tokens", "t-1", "deployments"]],
      ['{"":1,"":2}', "", []],
    ];
    for (const [text, key, path] of cases) {
      let thrown: unknown;
      try {
        parseJsonText(text);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(DuplicateJsonKeyError);
      expect({ key: (thrown as DuplicateJsonKeyError).key, path: (thrown as DuplicateJsonKeyError).path }).toEqual({ key, path });
    }
    expect(() => parseJsonText('{"tokens":{"t-1":{"d":1,"d":2}}}')).toThrow('the key "d" is given twice in tokens["t-1"]; only the last would count');
  });
});
