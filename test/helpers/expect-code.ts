import { expect } from "vitest";
import { isWorkflowHostError } from "../../src/errors.js";

/** The `code` of the WorkflowHostError `fn` throws synchronously; fails the test otherwise. */
export function thrownCode(fn: () => unknown): string {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(isWorkflowHostError(thrown), String(thrown)).toBe(true);
  return (thrown as { code: string }).code;
}

/** Asserts that `fn` throws synchronously a WorkflowHostError with this `code`. */
export function expectCode(fn: () => unknown, code: string): void {
  expect(thrownCode(fn)).toBe(code);
}
