/**
 * The consumers file of `workflow-host serve --dispatch <file>`: HTTP consumers only (a
 * function consumer needs a program; use `host.dispatch` from the library).
 *
 *   {"consumers": [{"name": "billing", "url": "https://…", "secretEnv": "BILLING_SECRET",
 *                   "filter": {"types": ["TimerFired"]}, "concurrency": 8, "maxAttempts": 5,
 *                   "backoff": [1000, 5000, 30000], "timeoutMs": 10000}]}
 *
 * The secret is given as `secretEnv` (the name of an environment variable: keeps it out of the
 * file) or `secret`.
 */
import { DuplicateJsonKeyError, parseJsonText } from "../../src/config-json.js";
import { WorkflowHostError } from "../../src/errors.js";
import { checkConsumer } from "./dispatch-keys.js";
import type { ConsumerOptions } from "./dispatch-types.js";

const KNOWN = new Set(["name", "url", "secret", "secretEnv", "filter", "concurrency", "maxAttempts", "backoff", "timeoutMs", "maxUnrecorded", "startFrom"]);

function invalid(detail: string, data: Record<string, unknown> = {}): WorkflowHostError {
  return new WorkflowHostError("config_invalid", `dispatch config: ${detail}`, data);
}

/**
 * Parses and checks a consumers file.
 * @param env where `secretEnv` names are looked up
 * @returns consumer options, each with an `http` target
 * @throws config_invalid (bad JSON, unknown field, missing secret, bad option, a name twice),
 *   id_invalid (a consumer name or a filter id)
 */
export function parseDispatchConfig(text: string, env: Readonly<Record<string, string | undefined>>): ConsumerOptions[] {
  let raw: unknown;
  try {
    raw = parseJsonText(text);
  } catch (error) {
    if (error instanceof DuplicateJsonKeyError) throw invalid(error.message, { path: error.path });
    throw invalid(`not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const list = (raw as { consumers?: unknown } | null)?.consumers;
  if (typeof raw !== "object" || raw === null || !Array.isArray(list) || list.length === 0) throw invalid(`expected {"consumers": [ … ]} with at least one consumer`);
  const names = new Set<string>();
  return list.map((entry: unknown, index) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw invalid(`consumers[${index}] is not an object`, { index });
    const e = entry as Record<string, unknown>;
    for (const key of Object.keys(e)) if (!KNOWN.has(key)) throw invalid(`consumers[${index}] has an unknown field ${JSON.stringify(key)}; allowed: ${[...KNOWN].join(", ")}`, { index, field: key });
    let secret = e["secret"];
    if (e["secretEnv"] !== undefined) {
      if (typeof e["secretEnv"] !== "string") throw invalid(`consumers[${index}].secretEnv must be a string`, { index });
      secret = env[e["secretEnv"]];
      if (secret === undefined || secret === "") throw invalid(`consumers[${index}]: the environment variable ${e["secretEnv"]} is not set`, { index, secretEnv: e["secretEnv"] });
    }
    const options = {
      name: e["name"],
      http: { url: e["url"], secret },
      ...(e["filter"] === undefined ? {} : { filter: e["filter"] }),
      ...(e["concurrency"] === undefined ? {} : { concurrency: e["concurrency"] }),
      ...(e["maxAttempts"] === undefined ? {} : { maxAttempts: e["maxAttempts"] }),
      ...(e["backoff"] === undefined ? {} : { backoff: e["backoff"] }),
      ...(e["timeoutMs"] === undefined ? {} : { timeoutMs: e["timeoutMs"] }),
      ...(e["startFrom"] === undefined ? {} : { startFrom: e["startFrom"] }),
      ...(e["maxUnrecorded"] === undefined ? {} : { maxUnrecorded: e["maxUnrecorded"] }),
    } as ConsumerOptions;
    if (typeof e["url"] !== "string") throw invalid(`consumers[${index}].url must be a string`, { index });
    const checked = checkConsumer(options);
    if (names.has(checked.name)) throw invalid(`consumer ${checked.name} is named twice`, { consumer: checked.name });
    names.add(checked.name);
    return options;
  });
}
