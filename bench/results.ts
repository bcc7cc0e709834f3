/**
 * Renders `bench/RESULTS.md`: the machine, the date, every table of the full run, the issue's
 * targets met or missed, and the design notes kept in `bench/design-notes.md` (why each
 * optimisation exists, with before/after figures), which survive every rewrite.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatTable, type BenchTable } from "./table.js";

const notesPath = join(dirname(fileURLToPath(import.meta.url)), "design-notes.md");

function designNotes(): string {
  try {
    return readFileSync(notesPath, "utf8").trim();
  } catch {
    return "(bench/design-notes.md is missing)";
  }
}

/** The Markdown of RESULTS.md. */
export function renderResults(machine: readonly string[], tables: readonly BenchTable[]): string {
  const targets = tables.flatMap((t) => t.targets ?? []);
  const met = targets.filter((t) => t.met).length;
  return [
    "# Benchmark results",
    "",
    "Written by `npm run bench` (full run); do not edit by hand — edit `bench/design-notes.md` for the notes at the end.",
    "Each benchmark runs our path and a naive baseline (isomorphic-git high-level calls, one commit per event, one",
    "`setTimeout` per timer) on this machine in the same run; figures are medians of several tries unless a note says otherwise.",
    "",
    "## Machine",
    "",
    ...machine,
    "",
    "## Targets",
    "",
    `${met} of ${targets.length} met.`,
    "",
    "| target | result | figure |",
    "|---|---|---|",
    ...targets.map((t) => `| ${t.target} | ${t.met ? "met" : "**missed**"} | ${t.figure} |`),
    "",
    "## Tables",
    "",
    ...tables.map((t) => `${formatTable(t)}\n`),
    "## Design changes behind these figures",
    "",
    designNotes(),
    "",
  ].join("\n");
}
