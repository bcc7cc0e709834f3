/**
 * The one table shape every benchmark prints: one row per size, our figure beside the naive
 * baseline's and the ratio, oriented so that a ratio above 1 always means "ours is better".
 */

/** One measured figure: the number the ratio is computed from, and how it is shown. */
export interface Figure {
  readonly value: number;
  readonly text: string;
}

export interface TableRow {
  /** What was measured at this size, e.g. "10,000 runs, 20,000 timers". */
  readonly size: string;
  readonly ours: Figure;
  readonly baseline: Figure;
  /** How many times better ours is (baseline/ours for a cost, ours/baseline for a rate). */
  readonly ratio: number;
}

/**
 * How a target came out. `invalid`: the figure (or one it was derived from) is not a finite,
 * non-negative number — a clock read across processes, a division by zero, a failed run —
 * so it says nothing about the target and is never counted as met.
 */
export type Verdict = "met" | "missed" | "invalid";

/** One target of the issue, judged from this table's figures. */
export interface TargetCheck {
  /** The target as stated, e.g. "≥ 2,000 TimerFired/s on the 10,000-run repo". */
  readonly target: string;
  readonly verdict: Verdict;
  /** The figure it was judged on, and by how much it is met or missed. */
  readonly figure: string;
}

export interface BenchTable {
  /** Short name (`--only <name>`). */
  readonly name: string;
  readonly title: string;
  /** What the baseline is, in a few words. */
  readonly baseline: string;
  readonly rows: readonly TableRow[];
  /** Extra lines printed under the table (method, caveats, side figures). */
  readonly notes: readonly string[];
  /** The issue's targets this table decides (full sizes only). */
  readonly targets?: readonly TargetCheck[];
}

/** Whether a bigger figure is better (a rate) or a smaller one (a time, a size). */
export type Better = "higher" | "lower";

/**
 * A row from two figures. A baseline that could not be measured (NaN) gives a NaN ratio.
 * @param better which direction of the figure is an improvement
 */
export function row(size: string, ours: Figure, baseline: Figure, better: Better): TableRow {
  const ratio = better === "higher" ? ours.value / baseline.value : baseline.value / ours.value;
  return { size, ours, baseline, ratio };
}

/** Formats a number with thousands separators and `digits` decimals. */
export function num(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return String(value);
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** Formats a duration in ms: "0.42 ms", "37 ms", "4.1 s". */
export function ms(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (value < 1) return `${value.toFixed(2)} ms`;
  if (value < 10) return `${value.toFixed(1)} ms`;
  if (value < 1_000) return `${value.toFixed(0)} ms`;
  return `${(value / 1_000).toFixed(value < 10_000 ? 2 : 1)} s`;
}

/** Formats a ratio: "123×", "4.2×". */
export function times(value: number): string {
  if (!Number.isFinite(value)) return "n/a";
  return value >= 100 ? `${num(value)}×` : value >= 10 ? `${value.toFixed(1)}×` : `${value.toFixed(2)}×`;
}

/** The table as GitHub Markdown (also readable as plain text), with its title and notes. */
export function formatTable(table: BenchTable): string {
  const header = ["size", "ours", `baseline (${table.baseline})`, "ratio"];
  const cells = table.rows.map((r) => [r.size, r.ours.text, r.baseline.text, times(r.ratio)]);
  const widths = header.map((h, i) => cells.reduce((w, c) => Math.max(w, (c[i] as string).length), h.length));
  const line = (values: readonly string[]): string =>
    `| ${values.map((v, i) => (i === 0 ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `${"-".repeat(w + 1)}-` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  const out = [`### ${table.title}`, "", line(header), rule, ...cells.map(line)];
  if (table.notes.length > 0) out.push("");
  for (const n of table.notes) out.push(`- ${n}`);
  for (const t of table.targets ?? []) out.push(`- target ${t.target}: **${t.verdict === "met" ? "met" : t.verdict.toUpperCase()}** (${t.figure})`);
  return out.join("\n");
}

/**
 * Whether a measured figure can be judged: finite and not negative. Every figure these
 * benchmarks produce (a duration, a rate, a size, a ratio of two of them) is ≥ 0 when the
 * measurement worked; a negative one means clocks were mixed or a figure was lost.
 */
export function validFigure(value: number): boolean {
  return Number.isFinite(value) && value >= 0;
}

/**
 * The verdict on `value` against `limit`: `invalid` when `value` or any of `inputs` (the
 * figures `value` was computed from, e.g. both sides of a ratio) is not {@link validFigure};
 * else `met` when `value` ≤ `limit` (`kind` "max") or ≥ `limit` ("min"), else `missed`.
 * @throws RangeError when `limit` itself is not a finite number ≥ 0 (a bug in the target)
 */
export function judge(value: number, limit: number, kind: "max" | "min", inputs: readonly number[] = []): Verdict {
  if (!validFigure(limit)) throw new RangeError(`target limit ${String(limit)} is not a finite number >= 0`);
  if (!validFigure(value) || !inputs.every(validFigure)) return "invalid";
  if (kind === "max") return value <= limit ? "met" : "missed";
  return value >= limit ? "met" : "missed";
}

/**
 * A target of the form "figure must be at most / at least `limit`" (see {@link judge}).
 * @param inputs the figures `value` was derived from, each checked as `value` is
 * @returns the verdict, with the figure and the margin ("3.2× within the limit")
 */
export function target(
  text: string,
  value: number,
  limit: number,
  kind: "max" | "min",
  show: (v: number) => string,
  inputs: readonly number[] = [],
): TargetCheck {
  const verdict = judge(value, limit, kind, inputs);
  if (verdict === "invalid") {
    const bad = inputs.length > 0 ? ` (from ${inputs.map(String).join(", ")})` : "";
    return { target: text, verdict, figure: `${show(value)}${bad}; INVALID: not a finite, non-negative figure` };
  }
  const margin = kind === "max" ? limit / value : value / limit;
  const how = verdict === "met" ? `${times(margin)} within the limit` : `misses by ${times(1 / margin)}`;
  return { target: text, verdict, figure: `${show(value)}; ${how}` };
}
