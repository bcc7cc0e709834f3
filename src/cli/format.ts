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

/** A signed duration as "in 4.2s" / "3m 10s ago"-style text; `ms` > 0 is in the future. */
export function relative(ms: number): string {
  const text = duration(Math.abs(ms));
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

/** A duration in ms as "850ms", "4.2s", "3m 10s", "2h 5m", "3d 4h". */
export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)}s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)}h ${Math.floor((s % 3_600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3_600)}h`;
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
