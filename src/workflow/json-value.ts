/**
 * Plain JSON data: what survives `JSON.stringify` then `JSON.parse` unchanged. Event payloads
 * must be such data so a signal reads back exactly as it was delivered.
 */
import { WorkflowHostError, describeValue } from "../errors.js";

/**
 * Checks that a value is plain JSON data: null, a boolean, a finite number, a string, an array
 * without holes, or an object whose prototype is `Object.prototype` or null, recursively, with no
 * `undefined` anywhere (JSON would drop or change it). Class instances (`Date`, `Map`), functions,
 * symbols, bigints, `NaN` and cycles are refused, and so is nesting deeper than `maxDepth`.
 * @param value - the value to check.
 * @param field - name of the value, used to name the offending location (e.g. `"payload.a[2]"`).
 * @param maxDepth - levels of objects and arrays allowed, the value's own counting as 1; default
 *   {@link MAX_EVENT_DEPTH} − 1, for a field that sits inside an event.
 * @throws `event_invalid` with `data {field, value}` naming the first offending location, or
 *   `data {field, maxDepth}` for nesting deeper than allowed.
 */
export function assertJsonValue(value: unknown, field: string, maxDepth: number = MAX_EVENT_DEPTH - 1): void {
  try {
    // JSON.stringify finds cycles and bigints before the walk below could loop on a cycle.
    JSON.stringify(value);
  } catch (error) {
    // The engine's stack ran out: nested far deeper than any limit (no cycle or bigint gets that far).
    if (error instanceof RangeError && /call stack/i.test(error.message)) throw tooDeep(field, maxDepth);
    throw new WorkflowHostError("event_invalid", `${field} is not JSON data (${error instanceof Error ? error.message : String(error)})`, { field }, { cause: error });
  }
  const stack: Array<{ readonly at: string; readonly value: unknown; readonly depth: number }> = [{ at: field, value, depth: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const v = item.value;
    if (v === null || typeof v === "boolean" || typeof v === "string") continue;
    if (typeof v === "number") {
      if (Number.isFinite(v)) continue;
      throw notJson(item.at, v, "a non-finite number");
    }
    if (typeof v !== "object") throw notJson(item.at, v, `a ${typeof v}`);
    if (item.depth > maxDepth) throw tooDeep(field, maxDepth);
    const depth = item.depth + 1;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i += 1) {
        if (!(i in v)) throw notJson(`${item.at}[${i}]`, undefined, "an array hole");
        stack.push({ at: `${item.at}[${i}]`, value: v[i] as unknown, depth });
      }
      continue;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) throw notJson(item.at, v, "not a plain object");
    for (const [key, child] of Object.entries(v)) stack.push({ at: `${item.at}.${key}`, value: child, depth });
  }
}

/**
 * Deepest nesting of objects and arrays an event may have, the event object itself counting as
 * 1. Readers serialise events again from deep call stacks (the HTTP run view, `runs show`, a
 * dispatch body), where `JSON.stringify` overflows somewhere past 2,500 levels; an event that
 * was merely serialisable where it was checked made its whole run unreadable there. Checked on
 * write ({@link assertJsonValue}) and on read ({@link jsonTextNestsDeeper}).
 */
export const MAX_EVENT_DEPTH = 512;

/**
 * Whether JSON text nests objects and arrays deeper than `maxDepth` (brackets inside strings are
 * text). One pass over the text, no recursion; text of at most `2 × maxDepth` characters cannot
 * nest deeper and is not scanned. Malformed text is left to `JSON.parse`.
 */
export function jsonTextNestsDeeper(text: string, maxDepth: number = MAX_EVENT_DEPTH): boolean {
  if (text.length <= 2 * maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (c === 0x5d || c === 0x7d) depth -= 1;
  }
  return false;
}

function tooDeep(field: string, maxDepth: number): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${field} nests objects and arrays more than ${maxDepth} levels deep; allowed: at most ${maxDepth}`, { field, maxDepth });
}

function notJson(field: string, value: unknown, what: string): WorkflowHostError {
  return new WorkflowHostError("event_invalid", `${field} ${describeValue(value)} is ${what}; allowed: plain JSON data`, { field, value });
}
