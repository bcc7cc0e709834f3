/**
 * How many runs each reliability property makes: 1 000 by default (the CI budget), `FC_RUNS`
 * to go longer locally; `FC_SEED` replays a reported failure.
 */
export function propertyRuns(): { numRuns: number; seed?: number } {
  const fromEnv = Number(process.env["FC_RUNS"]);
  const numRuns = Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : 1_000;
  const seed = Number(process.env["FC_SEED"]);
  return Number.isSafeInteger(seed) && process.env["FC_SEED"] !== undefined ? { numRuns, seed } : { numRuns };
}
