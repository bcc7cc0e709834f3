/**
 * Reads a loose ref file over and over while other processes move it (and die while moving
 * it), the way any reader of the repository would: `git`, another host, a backup. Each read
 * must be a whole value — 40 lowercase hex digits and a newline — never empty, short, missing
 * or mixed; every distinct value is kept with the first time it was seen, so the caller can
 * check afterwards that each one names a commit on the final history. A ref read as git reads
 * it: when its loose file is absent, its line in packed-refs (where `git gc --auto`, run by a
 * `git push`, moves it: git writes packed-refs before it removes the loose file).
 */
import { readFileSync } from "node:fs";

export interface RefSample {
  readonly value: string;
  /** Wall-clock ms of the first read that returned this value. */
  readonly firstSeenMs: number;
}

export interface RefSamples {
  readonly reads: number;
  /** Distinct values in the order they were first seen. */
  readonly values: readonly RefSample[];
  /** Reads that were not 40 hex + "\n" (with what was read), in order. */
  readonly torn: readonly { readonly atMs: number; readonly bytes: string }[];
}

export interface RefSampler {
  /** Stops sampling and returns what was read. */
  stop(): RefSamples;
  /** A snapshot so far (sampling continues). */
  current(): RefSamples;
}

const WHOLE_REF = /^[0-9a-f]{40}\n$/;

/**
 * Starts sampling `refPath` every `everyMs` (default 2 ms) on the real clock.
 * @param refPath e.g. `<gitdir>/refs/heads/main`
 */
export function startRefSampler(refPath: string, everyMs = 2): RefSampler {
  let reads = 0;
  const values: RefSample[] = [];
  const torn: { atMs: number; bytes: string }[] = [];
  let last = "";
  const at = refPath.lastIndexOf("/refs/");
  const gitdir = refPath.slice(0, at);
  const refName = refPath.slice(at + 1);
  /** The ref's value in packed-refs as a loose file would hold it, or null when it is not there. */
  const packedValue = (): string | null => {
    let text: string;
    try {
      text = readFileSync(`${gitdir}/packed-refs`, "latin1");
    } catch {
      return null;
    }
    const line = text.split("\n").find((l) => l.endsWith(` ${refName}`));
    return line === undefined ? null : `${line.slice(0, -refName.length - 1)}\n`;
  };
  const sample = (): void => {
    let bytes: string;
    try {
      bytes = readFileSync(refPath, "latin1");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      bytes = (code === "ENOENT" ? packedValue() : null) ?? `<${code}>`;
    }
    reads += 1;
    if (!WHOLE_REF.test(bytes)) {
      torn.push({ atMs: Date.now(), bytes });
      return;
    }
    const value = bytes.slice(0, 40);
    if (value !== last) {
      values.push({ value, firstSeenMs: Date.now() });
      last = value;
    }
  };
  sample();
  const timer = setInterval(sample, everyMs);
  // A sampler left running by a failed test must not keep the process alive.
  timer.unref();
  const snapshot = (): RefSamples => ({ reads, values: [...values], torn: [...torn] });
  return {
    stop() {
      clearInterval(timer);
      sample();
      return snapshot();
    },
    current: snapshot,
  };
}
