/**
 * Renders `bench/RESULTS.md`: the machine, the date, every table of the full run, the issue's
 * targets met or missed, and the design notes kept in `bench/design-notes.md` (why each
 * optimisation exists, with before/after figures), which survive every rewrite.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatLoad, type SectionLoad, underLoad } from "./section-load.js";
import { formatTable, type BenchTable } from "./table.js";

const notesPath = join(dirname(fileURLToPath(import.meta.url)), "design-notes.md");

function designNotes(): string {
  try {
    return readFileSync(notesPath, "utf8").trim();
  } catch {
    return "(bench/design-notes.md is missing)";
  }
}

/** One line per section: its load before and after, marked when it exceeded the cores. */
function loadLines(loads: readonly SectionLoad[]): string[] {
  if (loads.length === 0) return [];
  return [
    "## Load during each section",
    "",
    "1/5/15-minute load averages just before and just after each section (the machine is shared; the",
    "average after includes the section's own processes). A section whose 1-minute load exceeded the core",
    "count is marked **under load**: its figures were taken while other jobs competed for the CPU.",
    "",
    "| section | load before | load after | cores | took | |",
    "|---|---|---|---|---|---|",
    ...loads.map(
      (l) =>
        `| ${l.name} | ${formatLoad(l.before)} | ${formatLoad(l.after)} | ${l.cores} | ${(l.durationMs / 1_000).toFixed(0)} s` +
        `${l.waitedMs > 0 ? ` (after waiting ${(l.waitedMs / 1_000).toFixed(0)} s for the load to fall)` : ""} | ${underLoad(l) ? "**under load**" : "ok"} |`,
    ),
    "",
  ];
}

/** A table's title, marked when its section ran under load. */
function titled(table: BenchTable, loads: readonly SectionLoad[]): BenchTable {
  const load = loads.find((l) => l.name === table.name);
  if (load === undefined || !underLoad(load)) return table;
  return { ...table, title: `${table.title} — taken under load (1-min load ${formatLoad([load.before[0] ?? 0])} → ${formatLoad([load.after[0] ?? 0])} on ${load.cores} cores)` };
}

/**
 * The Markdown of RESULTS.md.
 * @param intro extra lines after the heading (what the run included, e.g. that the 1,000,000-timer rows need `--huge`)
 * @param carried table sections (Markdown, each from its `###` heading) of an earlier run that this
 *   run did not measure, kept after this run's tables under a heading that says so
 */
export function renderResults(
  machine: readonly string[],
  tables: readonly BenchTable[],
  loads: readonly SectionLoad[] = [],
  intro: readonly string[] = [],
  carried: readonly string[] = [],
): string {
  const targets = tables.flatMap((t) => t.targets ?? []);
  const count = (verdict: string): number => targets.filter((t) => t.verdict === verdict).length;
  const invalid = count("invalid");
  return [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (full run); do not edit by hand — edit `bench/design-notes.md` for the notes at the end.",
    "Each benchmark runs our path and a naive baseline (isomorphic-git high-level calls, one commit per event, one",
    "`setTimeout` per timer) on this machine in the same run; figures are medians of several tries unless a note says otherwise.",
    ...intro,
    "",
    "## Machine",
    "",
    ...machine,
    "",
    ...loadLines(loads),
    "## Targets",
    "",
    `${count("met")} of ${targets.length} met${count("missed") > 0 ? `, ${count("missed")} missed` : ""}${invalid > 0 ? `, ${invalid} INVALID (a figure that is negative or not finite: the measurement is broken, not met)` : ""}.`,
    "",
    "| target | result | figure |",
    "|---|---|---|",
    ...targets.map((t) => `| ${t.target} | ${t.verdict === "met" ? "met" : `**${t.verdict}**`} | ${t.figure} |`),
    "",
    "## Tables",
    "",
    ...tables.map((t) => `${formatTable(titled(t, loads))}\n`),
    ...(carried.length === 0
      ? []
      : ["## Tables kept from the previous run of this file", "", "Not measured by this run; as the previous run printed them (its machine, load and date).", "", ...carried.map((c) => `${c.trimEnd()}\n`)]),
    "## Design changes behind these figures",
    "",
    designNotes(),
    "",
  ].join("\n");
}

/**
 * The table sections of a results file (each from its `### ` heading to the next heading), for
 * carrying over into a partial run's file those it did not measure.
 * @param text an earlier file's Markdown
 * @param measured titles of the tables measured now (a section whose title starts with one is dropped)
 */
export function tableSectionsOf(text: string, measured: readonly string[]): string[] {
  const start = text.indexOf("\n## Tables\n");
  if (start < 0) return [];
  // Up to the design notes: tables kept by an earlier partial run are tables too.
  const end = text.indexOf("\n## Design changes", start);
  const body = text.slice(start, end < 0 ? text.length : end);
  const kept: string[] = [];
  const keptTitles = new Set<string>();
  for (const section of body.split(/\n(?=### )/).slice(1)) {
    const headingAt = section.indexOf("\n## ");
    const part = headingAt < 0 ? section : section.slice(0, headingAt);
    const title = (part.split("\n")[0] as string).replace(/^### (\d+\. )?/, "");
    // One table per benchmark: the first (newest) of a title; a measured one is not kept at all.
    const name = title.replace(/ — taken under load .*$/, "");
    if (measured.some((m) => title.startsWith(m)) || keptTitles.has(name)) continue;
    keptTitles.add(name);
    kept.push(part);
  }
  return kept;
}
