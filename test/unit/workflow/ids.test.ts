import { describe, expect, it } from "vitest";
import { WorkflowHostError } from "../../../src/errors.js";
import {
  parseRepoId,
  parseRunId,
  parseSignalId,
  parseSignalName,
  parseStepId,
  parseTimerId,
} from "../../../src/workflow/ids.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(WorkflowHostError);
    return (error as WorkflowHostError).code;
  }
  return undefined;
}

// Case I3: ids that would escape a folder, hide a file, or break a path on some platform.
const hostile = ["../../.git/refs/heads/main", "..", "a/b", "a\\b", "run\u0000x", ".hidden", "", "C:\\x", "x".repeat(300)];
const notStrings: unknown[] = [undefined, null, 42, {}, ["a"], true];

describe("parseRunId and parseRepoId", () => {
  it.each(hostile)("rejects run id %j with id_invalid before any fs call", (value) => {
    expect(codeOf(() => parseRunId(value))).toBe("id_invalid");
  });

  it.each(hostile)("rejects repo id %j with repo_id_invalid", (value) => {
    expect(codeOf(() => parseRepoId(value))).toBe("repo_id_invalid");
  });

  it.each(notStrings)("rejects the non-string %j", (value) => {
    expect(codeOf(() => parseRunId(value))).toBe("id_invalid");
    expect(codeOf(() => parseRepoId(value))).toBe("repo_id_invalid");
  });

  it("accepts letters, digits, _ and - up to 128 characters", () => {
    expect(parseRunId("run-1_A")).toBe("run-1_A");
    expect(parseRepoId("a".repeat(128))).toBe("a".repeat(128));
    expect(codeOf(() => parseRepoId("a".repeat(129)))).toBe("repo_id_invalid");
    expect(codeOf(() => parseRunId("run.1"))).toBe("id_invalid");
  });

  it("says a missing id is missing, not 'a undefined' (a wake-up body without repoId)", () => {
    const message = (fn: () => unknown): string => {
      try {
        fn();
      } catch (error) {
        return (error as WorkflowHostError).message;
      }
      return "";
    };
    expect(message(() => parseRepoId(undefined))).toBe("repo_id_invalid: repoId is missing; allowed: 1-128 characters of A-Z a-z 0-9 _ -");
    expect(message(() => parseSignalName(undefined, "signalName"))).toMatch(/^id_invalid: signalName is missing; allowed: /);
    expect(message(() => parseRunId(null))).toMatch(/^id_invalid: runId null is not valid; /);
  });

  it("names the field and the value in the error data", () => {
    try {
      parseRunId("a/b");
      expect.unreachable();
    } catch (error) {
      expect((error as WorkflowHostError).data).toEqual({ field: "runId", value: "a/b" });
      expect((error as WorkflowHostError).message.startsWith("id_invalid: ")).toBe(true);
    }
    try {
      parseRunId("..", "data.runId");
      expect.unreachable();
    } catch (error) {
      expect((error as WorkflowHostError).data).toEqual({ field: "data.runId", value: ".." });
    }
  });
});

describe.each([
  ["timerId", parseTimerId],
  ["signalId", parseSignalId],
  ["signalName", parseSignalName],
  ["stepId", parseStepId],
] as const)("%s", (field, parse) => {
  it.each(hostile)("rejects %j with id_invalid", (value) => {
    expect(codeOf(() => parse(value))).toBe("id_invalid");
  });

  it.each(notStrings)("rejects the non-string %j", (value) => {
    expect(codeOf(() => parse(value))).toBe("id_invalid");
  });

  it("accepts dotted and coloned names starting with a letter or digit, up to 256", () => {
    expect(parse("step:1.a_b-c")).toBe("step:1.a_b-c");
    expect(parse("9")).toBe("9");
    expect(parse("a".repeat(256))).toBe("a".repeat(256));
    expect(codeOf(() => parse("a".repeat(257)))).toBe("id_invalid");
    expect(codeOf(() => parse("-a"))).toBe("id_invalid");
    expect(codeOf(() => parse("a b"))).toBe("id_invalid");
    expect(codeOf(() => parse("é"))).toBe("id_invalid");
  });

  it("names the field in the error data", () => {
    try {
      parse(".hidden");
      expect.unreachable();
    } catch (error) {
      expect((error as WorkflowHostError).data).toEqual({ field, value: ".hidden" });
    }
  });
});
