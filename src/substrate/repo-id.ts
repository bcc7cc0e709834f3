/**
 * Repository address checks, done before any fs call so a bad id can never reach a path.
 */
import { WorkflowHostError, describeValue } from "../errors.js";
import type { KindHandler, RepoId } from "./types.js";

/** docs/design.md §2: repo ids are 1–128 characters of `[A-Za-z0-9_-]`. */
export const REPO_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Finds the handler of `kind`.
 * @throws `kind_unknown` naming the kind and the registered kinds.
 */
export function handlerForKind(handlers: ReadonlyMap<string, KindHandler>, kind: unknown): KindHandler {
  const handler = typeof kind === "string" ? handlers.get(kind) : undefined;
  if (handler === undefined) {
    throw new WorkflowHostError(
      "kind_unknown",
      `repository kind ${describeValue(kind)} has no handler; registered kinds: ${[...handlers.keys()].join(", ") || "(none)"}`,
      { kind, known: [...handlers.keys()] },
    );
  }
  return handler;
}

/**
 * Validates a {@link RepoId} and returns its kind handler.
 * @throws `repo_id_invalid` when `id` does not match `^[A-Za-z0-9_-]{1,128}$`;
 *   `kind_unknown` when no handler is registered for `kind`.
 */
export function assertRepoId(handlers: ReadonlyMap<string, KindHandler>, repoId: RepoId): KindHandler {
  const id: unknown = (repoId as { id?: unknown } | null | undefined)?.id;
  if (typeof id !== "string" || !REPO_ID_PATTERN.test(id)) {
    throw new WorkflowHostError(
      "repo_id_invalid",
      `repository id ${describeValue(id)} is invalid; allowed: 1-128 characters of A-Z a-z 0-9 _ -`,
      { repoId },
    );
  }
  return handlerForKind(handlers, (repoId as { kind?: unknown }).kind);
}
