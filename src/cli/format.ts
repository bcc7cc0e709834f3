/**
 * Small text formatters for human output: aligned tables, short durations, short commit ids.
 */

/** Left-aligned columns separated by two spaces; the header row is printed as given. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => rows.reduce((w, r) => Math.max(w, (r[i] ?? "").length), h.length));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** A signed duration as "in 3 d 4 h" (`ms` > 0: in the future) or "late 2 ms" (`ms` < 0: past due). */
export function dueIn(ms: number): string {
  return ms >= 0 ? `in ${duration(ms)}` : `late ${duration(-ms)}`;
}

/**
 * A duration in ms, for people: "850 ms", "4.2 s", "3 min 10 s", "2 h 5 min", "3 d 4 h" (two
 * units at most, rounded down; exact figures are in the `--json` output).
 */
export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 1_000) return `${sign}${Math.round(abs)} ms`;
  if (abs < 60_000) return `${sign}${(Math.floor(abs / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(abs / 1_000);
  if (s < 3_600) return `${sign}${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${sign}${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

/** The first 7 characters of a commit id (or "-" for none). */
export function shortSha(sha: string | null | undefined): string {
  return sha === null || sha === undefined ? "-" : sha.slice(0, 7);
}

/** An ISO instant's time of day with milliseconds, "HH:MM:SS.mmm" (UTC). */
export function timeOfDay(iso: string): string {
  return iso.slice(11, 23);
}

/** "1 timer", "3 timers": `word` with an "s" unless `n` is 1 (or the given plural). */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

/**
 * An error on one line ({@link oneLine}) starting with its code: a `WorkflowHostError`'s message
 * already does (`<code>: …`), so it is not prefixed again; another message is given its code.
 */
export function errorLine(error: { readonly code: string; readonly message: string }): string {
  return oneLine(error.message.startsWith(`${error.code}: `) ? error.message : `${error.code}: ${error.message}`);
}

/** Line breaks and other control characters: C0 but tab, DEL, C1, U+2028, U+2029. */
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * `text` made safe for one line of a terminal or a log: line breaks and other control characters
 * (C0 but tab, DEL, C1, U+2028/U+2029) written as escapes (`\n`, `\u001b`). Fields printed by the
 * CLI can come from logs pushed with git (a reason, a name, who acknowledged), so a pushed
 * newline must not forge a report line, nor an escape sequence drive the reader's terminal.
 */
export function oneLine(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (c) => (c === "\n" ? "\\n" : c === "\r" ? "\\r" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
}
