/**
 * The fixture deployments under `fixtures/` and their manifests (`fixture.json`): what the
 * scheduler must do when it starts on each, written down as data and reviewed by a person.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type } from "arktype";
import { FIXTURE_MANIFEST } from "../../src/testing/fixture-repo.js";

/** Folder holding every fixture deployment. */
export const FIXTURES_DIR = fileURLToPath(new URL("../../fixtures/", import.meta.url));

const queued = type({ runId: "string", timerId: "string", fireAt: "string", setSeq: "number.integer" });
const fired = type({ runId: "string", timerId: "string", scheduledFor: "string", seq: "number.integer" });

const manifestSchema = type({
  description: "string > 0",
  /** The clock when the host starts on this deployment. */
  now: "string",
  expect: {
    /** Fields of the scheduler's `recovered` report. */
    recovered: { runs: "number.integer", pending: "number.integer", badEvents: "number.integer" },
    /** Every bad event reported, by path; `seq` null when the file name is not `<seq>.json`. */
    badEvents: type({ runId: "string", path: "string", seq: "number.integer | null", code: "string" }).array(),
    /** `queuedTimers()` as soon as `start()` resolved, before any timer ran. */
    armedAtStart: queued.array(),
    /** TimerFired committed at recovery (firedAt = now), with the seq each was appended at. */
    firedAtRecovery: fired.array(),
    skippedAtRecovery: type({
      runId: "string",
      timerId: "string",
      firstMissed: "string",
      lastMissed: "string",
      count: "number.integer",
      seq: "number.integer",
    }).array(),
    /** Commits the recovery fire made (timers due together commit together). */
    recoveryCommits: "number.integer",
    /** `queuedTimers()` once the recovery fire is committed. */
    pendingAfterRecovery: queued.array(),
    /** Running on from `now` until `until`: what fires (each at its scheduledFor) and what stays queued. */
    later: { until: "string", fired: fired.array(), pending: queued.array() },
    /** Timers that must gain no TimerFired beyond those in the fixture files. */
    neverFire: type({ runId: "string", timerId: "string" }).array(),
    /** `cancelTimer` at the end: each returns this outcome and commits nothing. */
    cancelOutcomes: type({
      runId: "string",
      timerId: "string",
      outcome: "'cancelled' | 'already_fired' | 'already_cancelled' | 'not_armed' | 'run_terminal'",
    }).array(),
  },
});

export type FixtureManifest = typeof manifestSchema.infer;
export type FixtureExpect = FixtureManifest["expect"];
export type ExpectedQueued = typeof queued.infer;
export type ExpectedFired = typeof fired.infer;

export interface FixtureCase {
  /** Folder name; also the deployment's repoId. */
  readonly name: string;
  readonly folder: string;
  readonly manifest: FixtureManifest;
}

/**
 * Every fixture deployment (a folder of `fixtures/` holding a `fixture.json`), sorted by name,
 * with its manifest checked. Folders without a manifest hold inputs of other tests.
 * @throws Error naming the manifest and arktype's summary when a manifest is malformed
 */
export function loadFixtureCases(): FixtureCase[] {
  const names = readdirSync(FIXTURES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(FIXTURES_DIR, entry.name, FIXTURE_MANIFEST)))
    .map((entry) => entry.name)
    .sort();
  return names.map((name) => {
    const folder = join(FIXTURES_DIR, name);
    const path = join(folder, FIXTURE_MANIFEST);
    const checked = manifestSchema(JSON.parse(readFileSync(path, "utf8")));
    if (checked instanceof type.errors) throw new Error(`${path}: ${checked.summary}`);
    return { name, folder, manifest: checked };
  });
}
