/**
 * Ref name rules, after `git check-ref-format`: a name that git would refuse (or that could
 * climb out of `refs/`) is rejected before it becomes a file path.
 */
import { WorkflowHostError, describeValue } from "../errors.js";

/** A full 40-hex lowercase SHA-1. */
/** The branch every deployment's state lives on unless an option names another. */
export const DEFAULT_REF = "refs/heads/main";

export const OID_PATTERN = /^[0-9a-f]{40}$/;

// Characters git forbids anywhere in a ref name: controls, space, ~ ^ : ? * [ \ and DEL.
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\x00-\x20~^:?*[\\\x7f]/;

function invalid(ref: string, reason: string): WorkflowHostError {
  return new WorkflowHostError(
    "path_violation",
    `ref name ${describeValue(ref)} is not allowed: ${reason}; use "HEAD", "main" or "refs/heads/<name>"`,
    { ref, reason },
  );
}

/**
 * Expands a ref as callers write it to its full name: `HEAD` stays `HEAD`, a name starting
 * with `refs/` is kept, anything else is a branch (`main` → `refs/heads/main`).
 * @throws `path_violation` for a name git's check-ref-format refuses (empty component, `..`,
 *   `@{`, a component starting with "." or ending in ".lock", forbidden characters).
 */
export function normalizeRefName(ref: string): string {
  if (typeof ref !== "string" || ref === "") throw invalid(String(ref), "empty");
  if (ref === "HEAD") return ref;
  const full = ref.startsWith("refs/") ? ref : `refs/heads/${ref}`;
  const problem = fullRefNameProblem(full);
  if (problem !== null) throw invalid(ref, problem);
  return full;
}

/**
 * Why `full` (a name starting with `refs/`, or `HEAD`) is not a ref name git would accept, or
 * null when it is. A name that passes stays inside `refs/` as a path: no empty, "." or ".."
 * component, no backslash. Used for names callers give and for symbolic-ref targets read
 * from disk alike.
 */
export function fullRefNameProblem(full: string): string | null {
  if (full === "HEAD") return null;
  if (!full.startsWith("refs/")) return `does not start with "refs/"`;
  if (FORBIDDEN.test(full)) return "forbidden character";
  if (full.includes("..") || full.includes("@{")) return `contains ".." or "@{"`;
  if (full.endsWith("/") || full.endsWith(".")) return `ends with "/" or "."`;
  for (const component of full.split("/")) {
    if (component === "") return "empty component";
    if (component.startsWith(".")) return `component starts with "."`;
    if (component.endsWith(".lock")) return `component ends with ".lock"`;
  }
  if (full === "refs/heads/HEAD" || full === "refs/heads/@") return "reserved name";
  return null;
}
