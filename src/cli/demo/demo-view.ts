/**
 * How the demo prints: one aligned line per thing that happens, then a summary table.
 */
import type { CliIo } from "../io.js";
import { printLine } from "../io.js";
import { table } from "../format.js";

/** Prints one progress line: wall time, what happened, run, timer or signal, detail. */
export function progressLine(io: CliIo, what: string, runId: string, subject: string, detail: string): void {
  const time = io.clock().toISOString().slice(11, 23);
  printLine(io, `  ${time}  ${what.padEnd(9)} ${runId.padEnd(13)} ${subject.padEnd(15)} ${detail}`.trimEnd());
}

/** The header above the progress lines. */
export function progressHeader(io: CliIo): void {
  printLine(io, `  ${"TIME (UTC)".padEnd(12)}  ${"EVENT".padEnd(9)} ${"RUN".padEnd(13)} ${"TIMER/SIGNAL".padEnd(15)} DETAIL`);
}

/** One row of the summary. */
export interface RunSummary {
  readonly runId: string;
  readonly story: string;
  readonly events: number;
  readonly fired: number;
  readonly skippedTicks: number;
  readonly signals: number;
  readonly state: string;
}

/** Prints the summary table. */
export function printSummary(io: CliIo, rows: readonly RunSummary[]): void {
  const lines = table(
    ["RUN", "WHAT IT SHOWS", "EVENTS", "FIRED", "SKIPPED", "SIGNALS", "STATE"],
    rows.map((r) => [r.runId, r.story, String(r.events), String(r.fired), String(r.skippedTicks), String(r.signals), r.state]),
  );
  for (const line of lines) printLine(io, `  ${line}`);
}

/** "HH:MM:SS.mmm" of an ISO instant (UTC), with a trailing Z. */
export function utcTime(iso: string): string {
  return `${iso.slice(11, 23)}Z`;
}

/** Wall time of an instant in an IANA zone, "HH:MM:SS". */
export function localTime(iso: string, zone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }).format(new Date(iso));
}
