/**
 * Plain JSON data: what survives `JSON.stringify` then `JSON.parse` unchanged. Event payloads
 * must be such data so a signal reads back exactly as it was delivered.
 */
import { WorkflowHostError, describeValue } from "../errors.js";

/**
 * Checks that a value is plain JSON data: null, a boolean, a finite number, a string, an array
 * without holes, or an object whose prototype is `Object.prototype` or null, recursively, with no
 * `undefined` anywhere (JSON would drop or change it). Class instances (`Date`, `Map`), functions,
 * symbols, bigints, `NaN` and cycles are refused.
 * @param value - the value to check.
 * @param field - name of the value, used to name the offending location (e.g. `"payload.a[2]"`).
 * @throws `event_invalid` with `data {field, value}` naming the first offending location.
 */
export function assertJsonValue(value: unknown, field: string): void {
  try {
    // JSON.stringify finds cycles and bigints before the walk below could loop on a cycle.
    JSON.stringify(value);
  } catch (error) {
    throw new WorkflowHostError("event_invalid", `${field} is not JSON data (${error instanceof Error ? error.message : String(error)})`, { field }, { cause: error });
  }
  const stack: Array<{ readonly at: string; readonly value: unknown }> = [{ at: field, value }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const v = item.value;
    if (v === null || typeof v === "boolean" || typeof v === "string") continue;
    if (typeof v === "number") {
      if (Number.isFinite(v)) continue;
      throw notJson(item.at, v, "a non-finite number");
    }
    if (typeof v !== "object") throw notJson(item.at, v, `a ${typeof v}`);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i += 1) {
        if (!(i in v)) throw notJson(`${item.at}[${i}]`, undefined, "an array hole");
        stack.push({ at: `${item.at}[${i}]`, value: v[i] as unknown });
      }
      continue;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) throw notJson(item.at, v, "not a plain object");
    for (const [key, child] of Object.entries(v)) stack.push({ at: `${item.at}.${key}`, value: child });
  }
}

function notJson(field: string, value: unknown, what: string): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${field} ${describeValue(value)} is ${what}; allowed: plain JSON data`, { field, value });
}
