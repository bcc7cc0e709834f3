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

/**
 * What `work` settles to: its rejection's `code` (`untyped …` for an error without one), or
 * `ok` when it resolves, so a test can assert one string either way.
 */
export async function settledCode(work: () => Promise<unknown>, ok = "succeeded"): Promise<string> {
  try {
    await work();
    return ok;
  } catch (error) {
    return (error as { code?: string }).code ?? `untyped ${String(error)}`;
  }
}
