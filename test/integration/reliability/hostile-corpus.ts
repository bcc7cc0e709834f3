/**
 * The hostile-input corpus in `fixtures/hostile/` (see its README): `cases.json` says what each
 * entry is and what every entry point must make of it; the entries are the files next to it,
 * or recipes for the few too big to keep in the repository.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ErrorCode } from "../../../src/errors.js";
import { REPO_ROOT } from "./serve-process.js";

export const HOSTILE_DIR = join(REPO_ROOT, "fixtures", "hostile");

/** A timer request (runtime `setTimer`, `workflow-host timer set`) carrying the hostile value. */
export interface TimerRequest {
  readonly timerId: unknown;
  readonly fireAt?: unknown;
  readonly cron?: string;
  readonly timezone?: string;
  readonly misfire?: string;
  readonly stepId?: string;
}

/** A signal delivery (runtime `deliverSignal`, `workflow-host signal send`) carrying it. */
export interface SignalRequest {
  readonly name: string;
  readonly id?: string;
  /** A payload of a string this many bytes long. */
  readonly payloadBytes?: number;
  /** A payload of arrays nested this deep. */
  readonly payloadDepth?: number;
}

export type Generator =
  | { readonly kind: "signal-payload"; readonly bytes: number }
  | { readonly kind: "padded-event"; readonly bytes: number }
  | { readonly kind: "deep-payload"; readonly depth: number }
  | { readonly kind: "deep-field"; readonly depth: number };

interface CaseBase {
  readonly id: string;
  readonly what: string;
}

/** One event file, committed as seq 2 after a valid TimerSet `ok` at seq 1 in its own run. */
export interface EventCase extends CaseBase {
  readonly kind: "event";
  readonly file?: string;
  readonly generate?: Generator;
  /** What reading it, writing it through the store and the host's report all say. */
  readonly code: ErrorCode;
  readonly request?: { readonly timer?: TimerRequest; readonly signal?: SignalRequest };
  /** The API request's code when it differs from `code`. */
  readonly requestCode?: ErrorCode;
  /** The CLI's code (and exit) when they differ from the request's (`usage` exits 2). */
  readonly cliCode?: ErrorCode;
  readonly cliExit?: number;
  /** The value cannot travel through a process's argv (a NUL, more than 128 KiB). */
  readonly cliInProcessOnly?: boolean;
}

/** An entry of a commit a log case pushes; `{run}` stands for `runs/<the case's run>`. */
export interface LogEntry {
  readonly path: string;
  readonly file?: string;
  /** 160000: a gitlink, whose file holds the submodule commit id. */
  readonly mode?: "100644" | "120000" | "160000";
  readonly delete?: boolean;
}

export interface Report {
  readonly path: string;
  readonly code: ErrorCode;
}

/** A whole log (or a run folder, or two commits) pushed with git. */
export interface LogCase extends CaseBase {
  readonly kind: "log";
  readonly dir: string;
  readonly commit: readonly LogEntry[];
  /** A second commit, pushed after the host handled the first. */
  readonly then?: readonly LogEntry[];
  /**
   * Git itself refuses the pushed commit (the deployment has `receive.fsckObjects`): it never
   * reaches the host, and the ref does not move.
   */
  readonly pushRefused?: boolean;
  /** What writing the first commit through the store says (`accepted`, or the git-only `not_representable`). */
  readonly storeWrite: ErrorCode | "accepted" | "not_representable";
  readonly hostReports: readonly Report[];
  readonly checkReports: readonly Report[];
  /** Timers of the case's run that fire exactly once, and ones that never fire. */
  readonly fires: readonly string[];
  readonly neverFires: readonly string[];
  /** Timers still armed at the end. */
  readonly armed?: readonly string[];
  /**
   * Series whose missed ticks the host records in exactly one TimerSkipped (from the pushed
   * fireAt); with `everyMs`, its count must be (lastMissed − firstMissed) / everyMs + 1.
   */
  readonly skippedOnce?: readonly { readonly timerId: string; readonly everyMs?: number }[];
  /** The run's unconsumed signals at the end. */
  readonly unconsumedSignals?: readonly { readonly signalId: string; readonly seq: number }[];
}

/** A hostile id passed where a run or repo id goes. */
export interface IdCase extends CaseBase {
  readonly kind: "id";
  readonly file: string;
  readonly code: ErrorCode;
  readonly cliCode?: ErrorCode;
  readonly cliExit?: number;
  readonly cliInProcessOnly?: boolean;
}

export type HostileCase = EventCase | LogCase | IdCase;

/** Every case, in file order. */
export function loadHostileCases(): HostileCase[] {
  return JSON.parse(readFileSync(join(HOSTILE_DIR, "cases.json"), "utf8")) as HostileCase[];
}

/** The run a case's files go to. */
export function runOf(c: HostileCase): string {
  return `h-${c.id}`;
}

/** A path of a log case with `{run}` filled in. */
export function resolvePath(c: HostileCase, path: string): string {
  return path.replace("{run}", `runs/${runOf(c)}`);
}

/** The bytes of an event case's file. */
export function eventBytes(c: EventCase): Uint8Array {
  if (c.file !== undefined) return readFileSync(join(HOSTILE_DIR, c.file));
  const gen = c.generate;
  if (gen === undefined) throw new Error(`case ${c.id} has neither file nor generate`);
  const head = (extra: string): string => `{"seq":2,"type":"SignalReceived","signalName":"approve","signalId":"s-${c.id}","at":"2026-01-01T00:00:00Z",${extra}}`;
  switch (gen.kind) {
    case "signal-payload":
      return Buffer.from(head(`"payload":"${"x".repeat(gen.bytes)}"`));
    case "padded-event":
      return Buffer.from(`{"seq":2,"type":"StepDone","pad":"${" ".repeat(gen.bytes)}"}`);
    case "deep-payload":
      return Buffer.from(head(`"payload":${"[".repeat(gen.depth)}${"]".repeat(gen.depth)}`));
    case "deep-field":
      return Buffer.from(`{"seq":2,"type":"StepDone","result":${"[".repeat(gen.depth)}${"]".repeat(gen.depth)}}`);
  }
}

/** The bytes of a log entry's fixture file. */
export function logEntryBytes(c: LogCase, entry: LogEntry): Uint8Array {
  if (entry.file === undefined) throw new Error(`case ${c.id}: entry ${entry.path} has no file`);
  return readFileSync(join(HOSTILE_DIR, c.dir, entry.file));
}

/** An id case's hostile value. */
export function idValue(c: IdCase): { field: "runId" | "repoId"; value: string } {
  return JSON.parse(readFileSync(join(HOSTILE_DIR, c.file), "utf8")) as { field: "runId" | "repoId"; value: string };
}

/** A request payload as described (a long string, or deeply nested arrays). */
export function requestPayload(request: SignalRequest): unknown {
  if (request.payloadBytes !== undefined) return "x".repeat(request.payloadBytes);
  if (request.payloadDepth !== undefined) {
    let value: unknown = [];
    for (let i = 1; i < request.payloadDepth; i += 1) value = [value];
    return value;
  }
  return null;
}
