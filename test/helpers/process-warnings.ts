/**
 * Process warnings (`process.emitWarning`, e.g. a pack that fails its checksum) emitted while a
 * test's body runs: `collectWarnings(async (warnings) => { …; expect(warnings…) })`.
 */
export async function collectWarnings<T>(body: (warnings: readonly (Error & { code?: string })[]) => Promise<T>): Promise<T> {
  const warnings: (Error & { code?: string })[] = [];
  const listen = (w: Error): void => {
    warnings.push(w);
  };
  process.on("warning", listen);
  try {
    return await body(warnings);
  } finally {
    process.off("warning", listen);
  }
}
