/**
 * JSON read from a file or a request body that a person wrote: `JSON.parse`, plus the two things
 * it does not say. A leading UTF-8 byte order mark (what some Windows editors and PowerShell 5's
 * `Out-File -Encoding utf8` write) is skipped, as RFC 8259 §8.1 allows, instead of being "not
 * JSON". A key given twice in one object is refused: `JSON.parse` keeps the last value and drops
 * the first without a word, so a token listed twice, or a `"timezone"` given twice in a body,
 * would count once, as whichever came last.
 */

/** A key that appears twice in one JSON object. */
export class DuplicateJsonKeyError extends Error {
  override readonly name = "DuplicateJsonKeyError";
  /** The keys and array indexes from the top down to the object holding the key twice. */
  readonly path: readonly (string | number)[];
  /** The key given twice. */
  readonly key: string;
  constructor(path: readonly (string | number)[], key: string) {
    super(`the key ${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key)} is given twice in ${describePath(path)}; only the last would count`);
    this.path = path;
    this.key = key;
  }
}

/** "the top-level object", or "consumers[0].filter" (keys that are not identifiers quoted). */
export function describePath(path: readonly (string | number)[]): string {
  if (path.length === 0) return "the top-level object";
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part.length > 64 ? `${part.slice(0, 64)}…` : part)}]`;
  }
  return out;
}

/**
 * Parses JSON text as people write it (see the module comment).
 * @throws SyntaxError from `JSON.parse` for text that is not JSON; DuplicateJsonKeyError for the
 *   first key (in text order) that appears twice in one object
 */
export function parseJsonText(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const value: unknown = JSON.parse(body);
  // Only objects can hold a key twice; a scalar or an object with one key needs no scan.
  if (typeof value === "object" && value !== null) findDuplicateKey(body);
  return value;
}

interface Frame {
  /** Keys seen so far (objects), null for an array. */
  readonly keys: Set<string> | null;
  /** Where this value sits in its parent. */
  readonly name: string | number | null;
  /** The key whose value comes next (objects) or the index of the current element (arrays). */
  current: string | number;
  /** Objects: the next string is a key. */
  expectKey: boolean;
}

/** Scans text `JSON.parse` accepted; throws at the first key given twice in one object. */
function findDuplicateKey(text: string): void {
  const stack: Frame[] = [];
  const pathOf = (): (string | number)[] => stack.slice(1).map((f) => f.name as string | number);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = stack[stack.length - 1];
      stack.push({ keys: c === 0x7b ? new Set() : null, name: parent === undefined ? null : parent.current, current: 0, expectKey: c === 0x7b });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top === undefined) continue;
      if (top.keys === null) top.current = (top.current as number) + 1;
      else top.expectKey = true;
    } else if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      let escapes = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (escaped) escaped = false;
        else if (d === 0x5c /* \ */) escaped = escapes = true;
        else if (d === 0x22) break;
      }
      const top = stack[stack.length - 1];
      if (top?.keys === null || top === undefined || !top.expectKey) continue;
      // "a\u0062" and "ab" are one key: only a key with escapes needs decoding.
      const key = escapes ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i);
      if (top.keys.has(key)) throw new DuplicateJsonKeyError(pathOf(), key);
      top.keys.add(key);
      top.current = key;
      top.expectKey = false;
    }
  }
}
