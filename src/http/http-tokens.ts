/**
 * Bearer tokens for the HTTP face. A token file is JSON mapping each token to a principal and
 * what it may do on which deployments:
 *
 * ```json
 * { "tokens": {
 *     "4b1d…(at least 16 characters)": { "principal": "ops", "deployments": { "*": ["read", "write"] } },
 *     "9c2e…": { "principal": "billing", "deployments": { "payments": ["read", "write"] } } } }
 * ```
 *
 * `"*"` stands for every deployment. Actions: `read` (timers, runs, deployments, the live feed;
 * `read` on `"*"` also opens `/metrics`) and `write` (signals, wake-ups, set and cancel timers).
 * An entry may carry `"expiresAt"`: an RFC 3339 instant with its offset
 * (`"2026-07-01T00:00:00Z"`); the token is refused from that instant on (`createHttpHandler`
 * answers 401 `token_expired` by its clock, and ends the live streams opened with it then).
 * Tokens are compared by their SHA-256, so a lookup takes the same time whatever the token.
 */
import { createHash } from "node:crypto";
import { DuplicateJsonKeyError, describePath, parseJsonText } from "../config-json.js";
import { readCappedText } from "../substrate/capped-read.js";
import { WorkflowHostError, describeValue } from "../errors.js";
import type { Authorize, Principal } from "../substrate/types.js";
import { REPO_OR_RUN_ID_PATTERN } from "../workflow/ids.js";
import { parseInstant } from "../workflow/time.js";

/** What a token may do. */
export type TokenAction = "read" | "write";

/** The principal a token from a token file stands for. */
export interface TokenPrincipal {
  /** Name for logs and for `authorize` (1–128 characters). */
  readonly name: string;
  /** Deployment id (or `"*"`) → the actions allowed there. */
  readonly deployments: Readonly<Record<string, readonly TokenAction[]>>;
  /** When the token stops being valid (ms since the epoch, from the entry's `expiresAt`); absent: never. */
  readonly expiresAtMs?: number;
}

/**
 * When a principal's token stops being valid: its `expiresAtMs` (ms since the epoch) when it is
 * an object carrying a finite number there (a {@link TokenPrincipal} from a token file with
 * `expiresAt`, or a principal an own `authenticate` returns), else null (never).
 * `createHttpHandler` refuses the principal from that instant on, by its clock.
 */
export function principalExpiresAtMs(principal: Principal): number | null {
  if (typeof principal !== "object" || principal === null) return null;
  const at = (principal as { expiresAtMs?: unknown }).expiresAtMs;
  return typeof at === "number" && Number.isFinite(at) ? at : null;
}

/** Resolves a presented token to its principal, or null when the token is unknown. */
export type Authenticate = (token: string) => Principal | null | Promise<Principal | null>;

export interface TokenAuth {
  readonly authenticate: Authenticate;
  /** Grants `read`/`list`/`subscribe` for `read`, `write`/`init` for `write`, per the file. */
  readonly authorize: Authorize;
  /** Principals named in the file. */
  readonly principals: readonly string[];
}

const TOKEN_PATTERN = /^[\x21-\x7e]{16,512}$/;
const ACTIONS: readonly TokenAction[] = ["read", "write"];
const ENTRY_FIELDS: readonly string[] = ["principal", "deployments", "expiresAt"];

/**
 * Checks a parsed token file.
 * @param json the parsed file, `{tokens: {<token>: {principal, deployments}}}`
 * @param source where it came from, for messages
 * @throws config_invalid when the shape is wrong: a token shorter than 16 or longer than 512 printable
 *   ASCII characters, a principal that is not a 1–128 character string, a deployment key that
 *   is neither `"*"` nor a valid repo id, an action other than `read`/`write`, an `expiresAt`
 *   that is not an RFC 3339 instant with its offset
 */
export function parseTokenFile(json: unknown, source = "the token file"): TokenAuth {
  const bad = (detail: string): WorkflowHostError => new WorkflowHostError("config_invalid", `${source}: ${detail}`, { source });
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw bad('must be a JSON object {"tokens": {...}}');
  // A field the file does not take is refused, not ignored: a token entry's `"readOnly": true` or
  // `"expires"` (for `expiresAt`) would otherwise look like a restriction and restrict nothing.
  const extraTop = Object.keys(json).find((key) => key !== "tokens");
  if (extraTop !== undefined) throw bad(`unknown field ${describeValue(extraTop)}; the file takes only "tokens"`);
  const tokens = (json as { tokens?: unknown }).tokens;
  if (typeof tokens !== "object" || tokens === null || Array.isArray(tokens)) throw bad('needs "tokens": an object mapping each token to {principal, deployments}');
  const byHash = new Map<string, TokenPrincipal>();
  for (const [token, entry] of Object.entries(tokens as Record<string, unknown>)) {
    if (!TOKEN_PATTERN.test(token)) throw bad(`a token must be 16 to 512 printable ASCII characters without spaces; ${token.length} characters given`);
    if (typeof entry !== "object" || entry === null) throw bad(`the entry of a token must be {principal, deployments}`);
    const { principal, deployments, expiresAt } = entry as { principal?: unknown; deployments?: unknown; expiresAt?: unknown };
    const extra = Object.keys(entry).find((key) => !ENTRY_FIELDS.includes(key));
    if (extra !== undefined) throw bad(`unknown field ${describeValue(extra)} in the entry of principal ${describeValue(principal)}; an entry takes only principal, deployments and expiresAt`);
    if (typeof principal !== "string" || principal.length < 1 || principal.length > 128) throw bad(`principal ${describeValue(principal)} must be a string of 1 to 128 characters`);
    if (typeof deployments !== "object" || deployments === null || Array.isArray(deployments)) throw bad(`deployments of ${principal} must be an object {"<repoId>" | "*": ["read", "write"]}`);
    const allowed: Record<string, TokenAction[]> = {};
    for (const [repoId, actions] of Object.entries(deployments as Record<string, unknown>)) {
      if (repoId !== "*" && !REPO_OR_RUN_ID_PATTERN.test(repoId)) throw bad(`deployment ${describeValue(repoId)} of ${principal} is neither "*" nor a repo id`);
      if (!Array.isArray(actions) || !actions.every((a): a is TokenAction => ACTIONS.includes(a as TokenAction))) {
        throw bad(`actions of ${principal} on ${repoId} must be a list of "read" and "write"`);
      }
      allowed[repoId] = [...actions];
    }
    let expiresAtMs: number | undefined;
    if (expiresAt !== undefined) {
      try {
        expiresAtMs = Date.parse(parseInstant(expiresAt, "expiresAt"));
      } catch {
        throw bad(`expiresAt ${describeValue(expiresAt)} of ${principal} is not an RFC 3339 instant with its offset (e.g. "2026-07-01T00:00:00Z")`);
      }
    }
    byHash.set(hashToken(token), { name: principal, deployments: allowed, ...(expiresAtMs === undefined ? {} : { expiresAtMs }) });
  }
  const authenticate: Authenticate = (token) => byHash.get(hashToken(token)) ?? null;
  const authorize: Authorize = (principal, repoId, _ref, action) => {
    if (!isTokenPrincipal(principal)) return false;
    const need: TokenAction = action === "write" || action === "init" ? "write" : "read";
    const grants = (id: string): boolean => principal.deployments[id]?.includes(need) === true;
    return grants("*") || (repoId.id !== "*" && grants(repoId.id));
  };
  return { authenticate, authorize, principals: [...new Set([...byHash.values()].map((p) => p.name))] };
}

/** Token rights that can be replaced while served (what `serve --tokens` uses to follow its file). */
export interface ReplaceableTokens extends TokenAuth {
  /** Puts `next` in place: every request authenticated from now on is checked against it. */
  replace(next: TokenAuth): void;
  /**
   * Calls `listener` after each {@link ReplaceableTokens.replace}. `createHttpHandler` ends its
   * live streams then: a stream keeps the principal it was opened with, so one of a token taken
   * out of the file would go on; its client reconnects with its token, checked anew.
   * @returns a function that removes the listener
   */
  onReplace(listener: () => void): () => void;
}

/** {@link TokenAuth} that starts as `initial` and can be replaced (see {@link ReplaceableTokens}). */
export function replaceableTokens(initial: TokenAuth): ReplaceableTokens {
  let current = initial;
  const listeners = new Set<() => void>();
  return {
    authenticate: (token) => current.authenticate(token),
    authorize: (principal, repoId, ref, action) => current.authorize(principal, repoId, ref, action),
    get principals() {
      return current.principals;
    },
    replace(next) {
      current = next;
      for (const listener of [...listeners]) listener();
    },
    onReplace(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** Largest token file read (bytes): 16 MiB, far above any real token file (a few KB). */
export const MAX_TOKEN_FILE_BYTES = 16 * 1024 * 1024;

/**
 * Reads and checks a token file: a regular file of at most {@link MAX_TOKEN_FILE_BYTES} (a FIFO,
 * device or folder is refused before it is read, so none can block or flood the caller; a larger
 * file is refused by its size).
 * @throws config_invalid (missing, unreadable, no regular file, over the bound, not JSON, wrong
 *   shape; see {@link parseTokenFile}), as for every configuration file (dispatch, schedules)
 */
export async function loadTokenFile(path: string): Promise<TokenAuth> {
  let text: string;
  try {
    text = await readCappedText(path, MAX_TOKEN_FILE_BYTES);
  } catch (error) {
    throw new WorkflowHostError("config_invalid", `token file ${path} cannot be read: ${(error as Error).message}`, { path }, { cause: error });
  }
  let json: unknown;
  try {
    json = parseJsonText(text);
  } catch (error) {
    if (error instanceof DuplicateJsonKeyError) throw new WorkflowHostError("config_invalid", `token file ${path}: ${duplicateKeyMessage(error)}`, { path }, { cause: error });
    throw new WorkflowHostError("config_invalid", `token file ${path} is not JSON: ${(error as Error).message}`, { path }, { cause: error });
  }
  return parseTokenFile(json, `token file ${path}`);
}

/**
 * A key given twice in a token file, told without the token: a token listed twice (whichever
 * entry came last would be its only one, the rights of the other dropped) or a field given twice
 * in a token's entry.
 */
function duplicateKeyMessage(error: DuplicateJsonKeyError): string {
  const [top, token, ...rest] = error.path;
  if (top !== "tokens") return error.message;
  if (token === undefined) return "a token is listed twice in tokens; only its last entry would count: give each token one entry";
  return `the key ${JSON.stringify(error.key)} is given twice in ${describePath(["tokens", "<a token>", ...rest])}; only the last would count`;
}

function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function isTokenPrincipal(value: unknown): value is TokenPrincipal {
  return typeof value === "object" && value !== null && typeof (value as TokenPrincipal).name === "string" && typeof (value as TokenPrincipal).deployments === "object";
}
