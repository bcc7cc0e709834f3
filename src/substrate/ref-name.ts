/**
 * Ref name rules, after `git check-ref-format`: a name that git would refuse (or that could
 * climb out of `refs/`) is rejected before it becomes a file path.
 */
import { WorkflowHostError, describeValue } from "../errors.js";

/** A full 40-hex lowercase SHA-1. */
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
  if (FORBIDDEN.test(full)) throw invalid(ref, "forbidden character");
  if (full.includes("..") || full.includes("@{")) throw invalid(ref, `contains ".." or "@{"`);
  if (full.endsWith("/") || full.endsWith(".")) throw invalid(ref, `ends with "/" or "."`);
  for (const component of full.split("/")) {
    if (component === "") throw invalid(ref, "empty component");
    if (component.startsWith(".")) throw invalid(ref, `component starts with "."`);
    if (component.endsWith(".lock")) throw invalid(ref, `component ends with ".lock"`);
  }
  if (full === "refs/heads/HEAD" || full === "refs/heads/@") throw invalid(ref, "reserved name");
  return full;
}
