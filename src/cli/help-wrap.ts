/**
 * Fits help texts to a terminal width (100 columns): a longer line is wrapped at a space, its
 * continuation indented the way the line reads. An option's description continues under the
 * description, a usage line under its first flag, a command table row under its summary, an
 * example command with a trailing ` \` (so it still pastes into a shell) and never inside quotes;
 * an over-long line of prose is reflowed with the rest of its paragraph. Lines that fit are left
 * exactly as written.
 */

/** Widest line a help text may have (columns; every character counts one). */
export const HELP_COLUMNS = 100;

const EXAMPLE = /^(\s+)workflow-host\s/;
const USAGE = /^(\s*Usage: workflow-host (?:[a-z]+ )*?)(?=[-[(<])/;
const OPTION = /^(\s*(?:-\w, )?--[\w-]+(?: \S+)?\s{2,})\S/;
const TABLE_ROW = /^( {2}[a-z]+(?: [a-z]+)?\s{2,})\S/;

/** `text` with every line wrapped to at most `columns` characters where a space allows. */
export function wrapHelp(text: string, columns = HELP_COLUMNS): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] as string;
    if ([...line].length <= columns) {
      out.push(line);
      continue;
    }
    const example = EXAMPLE.exec(line);
    if (example !== null) {
      out.push(...wrapExample(line, (example[1] as string).length + 4, columns));
      continue;
    }
    // A hand-wrapped example's continuation line (the line before ends in ` \`) stays pasteable.
    const continuation = /^\s+/.exec(line);
    if (continuation !== null && (out[out.length - 1] ?? "").endsWith(" \\")) {
      out.push(...wrapExample(line, continuation[0].length, columns));
      continue;
    }
    const hanging = USAGE.exec(line) ?? OPTION.exec(line) ?? TABLE_ROW.exec(line);
    if (hanging !== null) {
      out.push(...wrapAt(line, (hanging[1] as string).length, columns));
      continue;
    }
    // Prose: this line and the rest of its paragraph, reflowed.
    const lead = /^\s*/.exec(line)?.[0] ?? "";
    const words = [line.trim()];
    while (i + 1 < lines.length && isProseOf(lines[i + 1] as string, lead)) {
      i += 1;
      words.push((lines[i] as string).trim());
    }
    out.push(...wrapAt(lead + words.join(" "), lead.length, columns, true));
  }
  return out.join("\n");
}

/** Whether `line` continues a paragraph of prose indented by `lead`. */
function isProseOf(line: string, lead: string): boolean {
  if (line.trim() === "" || (/^\s*/.exec(line)?.[0] ?? "") !== lead) return false;
  return !(EXAMPLE.test(line) || USAGE.test(line) || OPTION.test(line) || /^[A-Z][\w ]*:$/.test(line.trim()) || /^\s*[-*] /.test(line));
}

/**
 * `line` broken at spaces into pieces of at most `columns`, each after the first indented by
 * `indent`. Usage and option lines break before a flag or bracket where one is near enough, so a
 * flag stays with its value; `prose` breaks at the last space that is not before a dash, so a
 * flag or argument stays with what it belongs to (`serve --retention-ms`, `head -1`).
 */
function wrapAt(line: string, indent: number, columns: number, prose = false): string[] {
  const pieces: string[] = [];
  let rest = line;
  while ([...rest].length > columns) {
    const cut = prose ? lastProseSpace(rest, columns) : (lastSpace(rest, columns, indent, /[-[(]/) ?? rest.lastIndexOf(" ", columns));
    if (cut <= indent) break;
    pieces.push(rest.slice(0, cut).trimEnd());
    rest = " ".repeat(indent) + rest.slice(cut + 1).trimStart();
  }
  pieces.push(rest);
  return pieces;
}

/** An example command broken at spaces outside quotes, each piece but the last ending in ` \`. */
function wrapExample(line: string, indent: number, columns: number): string[] {
  const pieces: string[] = [];
  let rest = line;
  while ([...rest].length > columns) {
    const cut = lastUnquotedSpace(rest, columns - 2, indent, true) ?? lastUnquotedSpace(rest, columns - 2, indent, false) ?? -1;
    if (cut < 0) break;
    pieces.push(`${rest.slice(0, cut).trimEnd()} \\`);
    rest = " ".repeat(indent) + rest.slice(cut + 1).trimStart();
  }
  pieces.push(rest);
  return pieces;
}

/** Index of the last space at or before `limit` not followed by a dash (a flag stays with the word before it), or -1. */
function lastProseSpace(text: string, limit: number): number {
  for (let i = Math.min(limit, text.length - 1); i >= 0; i -= 1) {
    if (text[i] === " " && text[i + 1] !== "-") return i;
  }
  return -1;
}

/**
 * Index of the last space at or before `limit` that lies in the last third of the allowed width
 * and comes before a character matching `next`, or null.
 */
function lastSpace(text: string, limit: number, indent: number, next: RegExp): number | null {
  const floor = indent + Math.floor(((limit - indent) * 2) / 3);
  for (let i = Math.min(limit, text.length - 1); i > floor; i -= 1) {
    if (text[i] === " " && next.test(text[i + 1] ?? "")) return i;
  }
  return null;
}

/**
 * Index of the last space at or before `limit` (and after `after`) that no quote encloses, or
 * null; with `beforeFlag`, only one followed by `-` in the last third of the width.
 */
function lastUnquotedSpace(text: string, limit: number, after: number, beforeFlag: boolean): number | null {
  const floor = beforeFlag ? after + Math.floor(((limit - after) * 2) / 3) : after;
  let quote: string | null = null;
  let found: number | null = null;
  for (let i = 0; i < text.length && i <= limit; i += 1) {
    const c = text[i] as string;
    if (quote !== null) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === " " && i > floor && (!beforeFlag || text[i + 1] === "-")) {
      found = i;
    }
  }
  return found;
}
