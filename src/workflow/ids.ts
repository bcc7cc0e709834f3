/**
 * Identifier parsers (docs/design.md §2). Every id reaches a file path or a git tree entry sooner or
 * later, so each is checked against a closed alphabet before any fs or git call: no `/`, `\`,
 * NUL, `..` or leading dot can get through, whatever the platform.
 */
import { WorkflowHostError, describeValue, type ErrorCode } from "../errors.js";

/** `repoId` and `runId`: one path segment of ASCII letters, digits, `_` and `-`, 1–128 long. */
export const REPO_OR_RUN_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * `timerId`, `signalId`, `signalName`, `stepId`: 1–256 characters, starting with a letter or a
 * digit (so never `.`/`..` or a hidden name), then letters, digits, `_`, `.`, `:` and `-`.
 */
export const NAME_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}$/;

function parseId(value: unknown, pattern: RegExp, code: ErrorCode, field: string, allowed: string): string {
  if (typeof value === "string" && pattern.test(value)) return value;
  if (value === undefined) throw new WorkflowHostError(code, `${field} is missing; allowed: ${allowed}`, { field, value });
  const shown = typeof value === "string" ? describeValue(value) : value === null ? "null" : `a ${typeof value}`;
  throw new WorkflowHostError(code, `${field} ${shown} is not valid; allowed: ${allowed}`, { field, value });
}

const RUN_ALLOWED = "1-128 characters of A-Z a-z 0-9 _ -";
const NAME_ALLOWED = "1-256 characters of A-Z a-z 0-9 _ . : -, starting with a letter or digit";

/**
 * Checks a repository id (`^[A-Za-z0-9_-]{1,128}$`, docs/design.md §2).
 * @param value - anything; only a matching string passes.
 * @param field - name used in the error (default `"repoId"`).
 * @returns the same string.
 * @throws `repo_id_invalid` with `data {field, value}`.
 */
export function parseRepoId(value: unknown, field = "repoId"): string {
  return parseId(value, REPO_OR_RUN_ID_PATTERN, "repo_id_invalid", field, RUN_ALLOWED);
}

/**
 * Checks a run id (`^[A-Za-z0-9_-]{1,128}$`, docs/design.md §2); a run id is one folder name under `runs/`.
 * @param field - name used in the error (default `"runId"`).
 * @returns the same string.
 * @throws `id_invalid` with `data {field, value}`.
 */
export function parseRunId(value: unknown, field = "runId"): string {
  return parseId(value, REPO_OR_RUN_ID_PATTERN, "id_invalid", field, RUN_ALLOWED);
}

/**
 * Checks a timer id (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}$`, docs/design.md §2).
 * @param field - name used in the error (default `"timerId"`).
 * @returns the same string.
 * @throws `id_invalid` with `data {field, value}`.
 */
export function parseTimerId(value: unknown, field = "timerId"): string {
  return parseId(value, NAME_ID_PATTERN, "id_invalid", field, NAME_ALLOWED);
}

/**
 * Checks a signal id, the dedupe key of a delivery (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}$`).
 * @param field - name used in the error (default `"signalId"`).
 * @returns the same string.
 * @throws `id_invalid` with `data {field, value}`.
 */
export function parseSignalId(value: unknown, field = "signalId"): string {
  return parseId(value, NAME_ID_PATTERN, "id_invalid", field, NAME_ALLOWED);
}

/**
 * Checks a signal name (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}$`).
 * @param field - name used in the error (default `"signalName"`).
 * @returns the same string.
 * @throws `id_invalid` with `data {field, value}`.
 */
export function parseSignalName(value: unknown, field = "signalName"): string {
  return parseId(value, NAME_ID_PATTERN, "id_invalid", field, NAME_ALLOWED);
}

/**
 * Checks a step id (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,255}$`).
 * @param field - name used in the error (default `"stepId"`).
 * @returns the same string.
 * @throws `id_invalid` with `data {field, value}`.
 */
export function parseStepId(value: unknown, field = "stepId"): string {
  return parseId(value, NAME_ID_PATTERN, "id_invalid", field, NAME_ALLOWED);
}
