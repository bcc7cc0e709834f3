import { expect } from "vitest";
import { isWorkflowHostError } from "../../src/errors.js";

/** Asserts that `fn` throws synchronously a WorkflowHostError with this `code`. */
export function expectCode(fn: () => unknown, code: string): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(isWorkflowHostError(thrown), String(thrown)).toBe(true);
  expect((thrown as { code: string }).code).toBe(code);
}
