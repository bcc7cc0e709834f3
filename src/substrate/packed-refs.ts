/**
 * Reading `packed-refs` as git does, and the `ref_corrupt` errors for a torn ref file or a bad
 * packed-refs line.
 */
import { describeValue, WorkflowHostError } from "../errors.js";
import { fullRefNameProblem, OID_PATTERN } from "./ref-name.js";
import type { Oid } from "./types.js";

/** What a ref file must hold, said after a torn value. */
const EXPECTED_VALUE = "expected 40 hex digits and a newline";

/**
 * The `ref_corrupt` error: names the ref, the value found and why it is not usable.
 * @param expected what would be usable, or how to repair it (default: the shape of a ref file)
 * @param extra more `data` (a dangling ref names its `missingObject`)
 */
export function refCorrupt(ref: string, value: string, reason: string, cause?: unknown, expected = EXPECTED_VALUE, extra: Record<string, unknown> = {}): WorkflowHostError {
  return new WorkflowHostError(
    "ref_corrupt",
    `ref ${ref} holds ${describeValue(value)}, ${reason}; ${expected}`,
    { ref, value, reason, ...extra },
    cause === undefined ? {} : { cause },
  );
}

/**
 * The `ref_corrupt` error for a ref file (or `packed-refs`) that is not a regular file of a
 * sensible size: a FIFO, a device, a socket, a directory where a file belongs, or a huge file.
 * @param found what is at `path` ("a FIFO (named pipe)", …)
 */
export function refNotAFile(ref: string, path: string, found: string, expected = `a regular file (40 hex digits and a newline, or "ref: <name>")`): WorkflowHostError {
  return new WorkflowHostError(
    "ref_corrupt",
    `${ref} cannot be read: ${path} is ${found}; expected ${expected}; remove or repair it`,
    { ref, path, found, reason: "not_a_file" },
  );
}

/** The `ref_corrupt` error for an unreadable line of `packed-refs` (1-based `line`). */
function packedRefsCorrupt(path: string, line: number, text: string, reason: string): WorkflowHostError {
  return new WorkflowHostError(
    "ref_corrupt",
    `packed-refs ${path} line ${line} holds ${describeValue(text)}, ${reason}; expected "<40 hex> <ref name>", "^<40 hex>" or the "# pack-refs with:" header; repair or remove the line`,
    { file: path, line, value: text, reason },
  );
}

/**
 * Parses `packed-refs` as git does (refs/packed-backend.c), refusing what git refuses.
 * @throws `ref_corrupt` naming the file and the first bad line
 */
export function parsePackedRefs(path: string, text: string): Map<string, Oid> {
  const refs = new Map<string, Oid>();
  if (text === "") return refs;
  const lines = text.split("\n");
  // A complete file ends in "\n", so the last piece is empty; anything else is a torn line.
  const last = lines.pop() as string;
  if (last !== "") throw packedRefsCorrupt(path, lines.length + 1, last, "an unterminated line");
  let previousWasRef = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (i === 0 && line.startsWith("# pack-refs with:")) continue;
    if (line.startsWith("^")) {
      if (!previousWasRef || !OID_PATTERN.test(line.slice(1))) throw packedRefsCorrupt(path, i + 1, line, "a peeled line that follows no ref or holds no object id");
      previousWasRef = false;
      continue;
    }
    const match = /^([0-9a-f]{40}) (refs\/\S+)$/.exec(line);
    const problem = match?.[2] === undefined ? "not a ref line" : fullRefNameProblem(match[2]);
    if (match?.[1] === undefined || match[2] === undefined || problem !== null) throw packedRefsCorrupt(path, i + 1, line, problem ?? "not a ref line");
    refs.set(match[2], match[1]);
    previousWasRef = true;
  }
  return refs;
}

