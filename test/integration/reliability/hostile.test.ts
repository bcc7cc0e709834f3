/**
 * Hostile inputs (`fixtures/hostile/`) through every entry point: the library API (reading an
 * event, writing through the store, the runtime's requests), the CLI (in this process, and as
 * real processes for a few), and commits pushed with the real `git` CLI into a deployment a
 * running `workflow-host serve` follows. Each input gets its typed error, or is reported and
 * skipped; the host keeps running; nothing valid is lost; a restart fires nothing twice.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { createWorkflowHost, type WorkflowHost } from "../../../src/host/host.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { parseEvent } from "../../../src/workflow/events.js";
import { eventPath } from "../../../src/workflow/paths.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { hasGitCli } from "../../helpers/git-cli.js";
import { makeTempDir, removeTempDir } from "../../helpers/temp-dir.js";
import { errorCodeOf, runCliInProcess } from "./cli-in-process.js";
import { readDeploymentLog } from "./deployment-log.js";
import { openGitPusher, PushRefusedError, type PushedEntry } from "./git-pusher.js";
import {
  eventBytes,
  HOSTILE_DIR,
  idValue,
  loadHostileCases,
  logEntryBytes,
  requestPayload,
  resolvePath,
  runOf,
  type EventCase,
  type HostileCase,
  type IdCase,
  type LogCase,
  type LogEntry,
  type Report,
  type TimerRequest,
} from "./hostile-corpus.js";
import { killAllWatched, pollFor, runCliChild, sleep, spawnServe, type WatchedChild } from "./serve-process.js";

const cases = loadHostileCases();
const eventCases = cases.filter((c): c is EventCase => c.kind === "event");
const allLogCases = cases.filter((c): c is LogCase => c.kind === "log");
/** Log cases that reach the host; the others git itself refuses (see `pushRefused`). */
const logCases = allLogCases.filter((c) => c.pushRefused !== true);
const refusedCases = allLogCases.filter((c) => c.pushRefused === true);
const idCases = cases.filter((c): c is IdCase => c.kind === "id");
const OK_TIMER = (seq = 1): string => JSON.stringify({ seq, type: "TimerSet", data: { timerId: "ok", fireAt: "2026-01-01T00:00:00Z" } });
const REPO = "hostile";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };

let root = "";

beforeAll(async () => {
  expect(await hasGitCli()).toBe(true);
  root = await makeTempDir("wfh-hostile-");
});

afterAll(async () => {
  await killAllWatched();
  await removeTempDir(root);
});

afterEach(async () => {
  await killAllWatched();
});

/** "<case>: expected X, got Y" lines; the test asserts the list is empty, so every miss shows. */
type Misses = string[];

function codeOf(error: unknown): string {
  return isWorkflowHostError(error) ? error.code : `untyped ${error instanceof Error ? `${error.name}: ${error.message.slice(0, 120)}` : String(error)}`;
}

async function expectRejects(misses: Misses, label: string, expected: string, work: () => unknown): Promise<void> {
  try {
    await work();
    misses.push(`${label}: expected ${expected}, but it succeeded`);
  } catch (error) {
    if (codeOf(error) !== expected) misses.push(`${label}: expected ${expected}, got ${codeOf(error)}`);
  }
}

describe("the hostile corpus", () => {
  it("holds at least 40 entries, each described in the README with its outcome per entry point", () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
    expect(new Set(cases.map((c) => c.id)).size).toBe(cases.length);
    const readme = readFileSync(join(HOSTILE_DIR, "README.md"), "utf8");
    const missing = cases.filter((c) => !readme.includes(`| \`${c.id}\` |`)).map((c) => c.id);
    expect(missing).toEqual([]);
    // Every file in the corpus belongs to a case.
    const referenced = new Set<string>(["README.md", "cases.json"]);
    for (const c of cases) {
      if (c.kind === "log") for (const e of [...c.commit, ...(c.then ?? [])]) if (e.file !== undefined) referenced.add(`${c.dir}/${e.file}`);
      if (c.kind !== "log" && c.file !== undefined) referenced.add(c.file);
    }
    const onDisk = (dir: string): string[] =>
      readdirSync(join(HOSTILE_DIR, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? onDisk(`${dir}/${e.name}`) : [`${dir}/${e.name}`.replace(/^\.\//, "")]));
    expect(onDisk(".").filter((f) => !referenced.has(f))).toEqual([]);
  });
});

describe("hostile inputs through the API", () => {
  it("reading an event file gives each its typed error", () => {
    const misses: Misses = [];
    for (const c of eventCases) {
      try {
        parseEvent(eventBytes(c), { path: `runs/${runOf(c)}/events/2.json`, expectedSeq: 2 });
        misses.push(`${c.id}: expected ${c.code}, but it parsed`);
      } catch (error) {
        if (codeOf(error) !== c.code) misses.push(`${c.id}: expected ${c.code}, got ${codeOf(error)}`);
        else if (isWorkflowHostError(error) && error.data["path"] !== `runs/${runOf(c)}/events/2.json`) misses.push(`${c.id}: the error does not name the path`);
      }
    }
    expect(misses).toEqual([]);
  });

  it("writing an event file or a hostile log through the store is refused with its code, and the ref does not move", async () => {
    const dataDir = join(root, "api-store");
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const { commitSha: genesis } = await store.initRepo(null, RID);
      const misses: Misses = [];
      for (const c of eventCases) {
        const files = { [eventPath(runOf(c), 1)]: OK_TIMER(), [eventPath(runOf(c), 2)]: eventBytes(c) };
        await expectRejects(misses, c.id, c.code, () => store.writeTree(null, RID, "main", { files, message: c.id }));
      }
      for (const c of allLogCases) {
        if (c.storeWrite === "not_representable") continue;
        const files = Object.fromEntries(c.commit.map((e) => [resolvePath(c, e.path), logEntryBytes(c, e)]));
        if (c.storeWrite === "accepted") continue;
        await expectRejects(misses, c.id, c.storeWrite, () => store.writeTree(null, RID, "main", { files, message: c.id }));
      }
      expect(misses).toEqual([]);
      expect(await store.resolveRef(null, RID, "main")).toBe(genesis);
    } finally {
      await store.close();
    }
  });

  it("the runtime refuses each hostile timer, signal, run id and repo id before writing anything", async () => {
    const dataDir = join(root, "api-runtime");
    const host = createWorkflowHost({ dataDir, watch: false });
    await host.start();
    try {
      const { commitSha: before } = await host.createDeployment(REPO);
      const runtime = host.runtime(REPO);
      const misses: Misses = [];
      for (const c of eventCases) {
        const expected = c.requestCode ?? c.code;
        if (c.request?.timer !== undefined) {
          const spec = c.request.timer as Parameters<typeof runtime.setTimer>[1];
          await expectRejects(misses, `${c.id} setTimer`, expected, () => runtime.setTimer("r1", spec));
        }
        if (c.request?.signal !== undefined) {
          const s = c.request.signal;
          await expectRejects(misses, `${c.id} deliverSignal`, expected, () => runtime.deliverSignal("r1", s.name, requestPayload(s), s.id));
        }
      }
      for (const c of idCases) {
        const { field, value } = idValue(c);
        if (field === "runId") {
          await expectRejects(misses, `${c.id} setTimer`, c.code, () => runtime.setTimer(value, { timerId: "t", delayMs: 1_000 }));
          await expectRejects(misses, `${c.id} deliverSignal`, c.code, () => runtime.deliverSignal(value, "approve", null));
          await expectRejects(misses, `${c.id} channel`, c.code, () => host.channel(REPO, value));
        } else {
          await expectRejects(misses, `${c.id} createDeployment`, c.code, () => host.createDeployment(value));
          await expectRejects(misses, `${c.id} runtime`, c.code, () => host.runtime(value));
        }
      }
      expect(misses).toEqual([]);
      expect(await host.store.resolveRef(null, RID, "main")).toBe(before);
      expect(await host.store.listRepos(null, WORKFLOW_RUN_KIND)).toEqual([REPO]);
      expect(readdirSync(join(dataDir, "deployments"))).toEqual([`${REPO}.git`]);
    } finally {
      await host.stop();
    }
  });
});

/** The `timer set` / `signal send` arguments carrying a case's hostile request. */
function requestArgs(dataDir: string, c: EventCase): string[][] {
  const base = ["--data-dir", dataDir, "--repo", REPO, "--run", "r1"];
  const out: string[][] = [];
  const t: TimerRequest | undefined = c.request?.timer;
  if (t !== undefined) {
    const args = ["timer", "set", ...base, "--timer", String(t.timerId)];
    if (t.fireAt !== undefined) args.push("--fire-at", String(t.fireAt));
    if (t.cron !== undefined) args.push("--cron", t.cron);
    if (t.timezone !== undefined) args.push("--timezone", t.timezone);
    if (t.misfire !== undefined) args.push("--misfire", t.misfire);
    if (t.stepId !== undefined) args.push("--step", t.stepId);
    out.push(args);
  }
  const s = c.request?.signal;
  if (s !== undefined) {
    const args = ["signal", "send", ...base, "--name", s.name];
    if (s.id !== undefined) args.push("--id", s.id);
    // The payload's JSON text, built directly: a 100 000-deep value is beyond JSON.stringify.
    if (s.payloadDepth !== undefined) args.push("--payload", `${"[".repeat(s.payloadDepth)}${"]".repeat(s.payloadDepth)}`);
    else if (s.payloadBytes !== undefined) args.push("--payload", JSON.stringify(requestPayload(s)));
    out.push(args);
  }
  return out;
}

function idArgs(dataDir: string, c: IdCase): string[][] {
  const { field, value } = idValue(c);
  const d = ["--data-dir", dataDir];
  if (field === "runId") {
    return [
      ["timer", "set", ...d, "--repo", REPO, "--run", value, "--timer", "t", "--delay-ms", "1000"],
      ["signal", "send", ...d, "--repo", REPO, "--run", value, "--name", "approve"],
      ["runs", "show", ...d, "--repo", REPO, "--run", value],
    ];
  }
  return [
    ["repo", "create", ...d, "--repo", value],
    ["timer", "set", ...d, "--repo", value, "--run", "r1", "--timer", "t", "--delay-ms", "1000"],
  ];
}

/**
 * The CLI's exit-code rule for a hostile value given as a flag: refused by its own parser, it is
 * a bad flag value (exit 2); a payload over the event size limit is refused by the write, a
 * failure of the operation (exit 1).
 */
function cliExitOf(code: string): number {
  return code === "payload_too_large" ? 1 : 2;
}

describe("hostile inputs through the CLI", () => {
  it("timer set, signal send, runs show and repo create refuse each hostile value with its code and exit status, writing nothing", async () => {
    const dataDir = join(root, "cli");
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", REPO])).code).toBe(0);
    const store = openWorkflowStore({ dataDir, watch: false });
    const before = await store.resolveRef(null, RID, "main");
    const misses: Misses = [];
    const expectCli = async (label: string, args: readonly string[], code: string, exit: number): Promise<void> => {
      const out = await runCliInProcess(args);
      if (out.code !== exit || errorCodeOf(out.stderr) !== code) misses.push(`${label}: expected exit ${exit} ${code}, got exit ${out.code} ${out.stderr.trim().slice(0, 160)}`);
      if (out.stderr.trim().split("\n").length !== 1) misses.push(`${label}: the error is not one line`);
    };
    for (const c of eventCases) {
      const code = c.cliCode ?? c.requestCode ?? c.code;
      for (const args of requestArgs(dataDir, c)) await expectCli(`${c.id} ${args[0]} ${args[1]}`, args, code, c.cliExit ?? cliExitOf(code));
    }
    for (const c of idCases) {
      for (const args of idArgs(dataDir, c)) await expectCli(`${c.id} ${args[0]} ${args[1]}`, args, c.cliCode ?? c.code, c.cliExit ?? cliExitOf(c.cliCode ?? c.code));
    }
    expect(misses).toEqual([]);
    expect(await store.resolveRef(null, RID, "main")).toBe(before);
    expect(readdirSync(join(dataDir, "deployments"))).toEqual([`${REPO}.git`]);
    await store.close();
  });

  it("a real workflow-host process exits with the status and one-line error the corpus names", async () => {
    const dataDir = join(root, "cli-process");
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", REPO])).code).toBe(0);
    const picked = ["fireat-feb-30", "cron-unknown-zone", "timerid-slash", "missing-fireat", "signalid-traversal"].map((id) => eventCases.find((c) => c.id === id) as EventCase);
    const runs = picked.flatMap((c) => {
      const code = c.cliCode ?? c.requestCode ?? c.code;
      return requestArgs(dataDir, c).map((args) => ({ id: c.id, args, code, exit: c.cliExit ?? cliExitOf(code) }));
    });
    const traversal = idCases.find((c) => c.id === "runid-traversal") as IdCase;
    runs.push({ id: traversal.id, args: idArgs(dataDir, traversal)[0] as string[], code: traversal.code, exit: cliExitOf(traversal.code) });
    const outcomes = await Promise.all(runs.map(async (run) => ({ run, out: await runCliChild(run.args) })));
    const misses: Misses = [];
    for (const { run, out } of outcomes) {
      if (out.code !== run.exit || errorCodeOf(out.stderr) !== run.code || out.stderr.trim().split("\n").length !== 1) {
        misses.push(`${run.id}: expected exit ${run.exit} ${run.code}, got ${String(out.code)} ${out.stderr.trim()}`);
      }
    }
    expect(misses).toEqual([]);
  }, 120_000);
});

/** The entries a case pushes in its first commit. */
function firstCommit(c: EventCase | LogCase): PushedEntry[] {
  if (c.kind === "event") {
    return [
      { path: eventPath(runOf(c), 1), bytes: OK_TIMER() },
      { path: eventPath(runOf(c), 2), bytes: eventBytes(c) },
    ];
  }
  return c.commit.map((e) => pushed(c, e));
}

function pushed(c: LogCase, e: LogEntry): PushedEntry {
  if (e.delete === true) return { path: resolvePath(c, e.path), delete: true };
  return { path: resolvePath(c, e.path), bytes: logEntryBytes(c, e), ...(e.mode === undefined ? {} : { mode: e.mode }) };
}

interface BadReport {
  readonly path: string;
  readonly code: string;
}

function badReports(serve: WatchedChild): BadReport[] {
  const out: BadReport[] = [];
  for (const line of serve.lines()) {
    if (!line.includes('"event":"bad-event"')) continue;
    try {
      const parsed = JSON.parse(line) as { path?: string; error?: { code?: string } };
      out.push({ path: parsed.path ?? "", code: parsed.error?.code ?? "" });
    } catch {
      // a line cut by the process's end
    }
  }
  return out;
}

function expectedHostReports(c: EventCase | LogCase): Report[] {
  if (c.kind === "event") return [{ path: eventPath(runOf(c), 2), code: c.code }];
  return c.hostReports.map((r) => ({ path: resolvePath(c, r.path), code: r.code }));
}

function missingReports(label: string, expected: readonly Report[], seen: readonly BadReport[]): string[] {
  return expected.filter((r) => !seen.some((s) => s.path === r.path && s.code === r.code)).map((r) => `${label}: no bad-event report for ${r.path} (${r.code})`);
}

/** TimerFired events a log case itself pushes for `timerId` (the host must add none). */
function firesPushedBy(c: LogCase, timerId: string): number {
  let n = 0;
  for (const entry of [...c.commit, ...(c.then ?? [])]) {
    if (entry.file === undefined) continue;
    try {
      const event = JSON.parse(Buffer.from(logEntryBytes(c, entry)).toString("utf8")) as { type?: unknown; data?: { timerId?: unknown } };
      if (event.type === "TimerFired" && event.data?.timerId === timerId) n += 1;
    } catch {
      // not an event
    }
  }
  return n;
}

function skipsIn(log: Awaited<ReturnType<typeof readDeploymentLog>>, runId: string, timerId: string): { firstMissed: string; lastMissed: string; count: number }[] {
  return (log.runs.get(runId)?.events ?? [])
    .filter((e) => e.type === "TimerSkipped" && (e as { data: { timerId: string } }).data.timerId === timerId)
    .map((e) => (e as unknown as { data: { firstMissed: string; lastMissed: string; count: number } }).data);
}

function firesIn(log: Awaited<ReturnType<typeof readDeploymentLog>>, runId: string, timerId: string): number {
  return (log.runs.get(runId)?.events ?? []).filter((e) => e.type === "TimerFired" && (e as { data: { timerId: string } }).data.timerId === timerId).length;
}

describe("hostile trees git itself refuses", () => {
  it("a push holding a tree git's fsck refuses is rejected by the deployment, and its ref does not move", async () => {
    const dataDir = join(root, "git-refused");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", REPO])).code).toBe(0);
    const store = openWorkflowStore({ dataDir, watch: false });
    const before = await store.resolveRef(null, RID, "main");
    const pusher = await openGitPusher(gitdir);
    const misses: Misses = [];
    try {
      expect(refusedCases.length).toBeGreaterThan(0);
      for (const c of refusedCases) {
        try {
          await pusher.push(firstCommit(c), c.id, { maxAttempts: 1 });
          misses.push(`${c.id}: the push was accepted`);
        } catch (error) {
          if (!(error instanceof PushRefusedError)) misses.push(`${c.id}: expected a refused push, got ${String(error)}`);
        }
      }
    } finally {
      await pusher.close();
    }
    expect(misses).toEqual([]);
    expect(await store.resolveRef(null, RID, "main")).toBe(before);
    await store.close();
  }, 60_000);
});

describe("hostile inputs pushed with git to a running host", () => {
  it("are reported and skipped while every valid timer fires once, the host keeps running, and a restart fires nothing twice", async () => {
    const dataDir = join(root, "git");
    const gitdir = join(dataDir, "deployments", `${REPO}.git`);
    expect((await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", REPO])).code).toBe(0);
    const serve = spawnServe(dataDir, ["--poll-ms", "100"]);
    await serve.waitForLine(/"event":"serving"/, 60_000);
    const pusher = await openGitPusher(gitdir);
    const pushedCases = [...eventCases, ...logCases];
    try {
      // A few cases per commit: the host must take each commit apart, not give up on it.
      for (let i = 0; i < pushedCases.length; i += 4) {
        const group = pushedCases.slice(i, i + 4);
        await pusher.push(group.flatMap(firstCommit), `hostile: ${group.map((c) => c.id).join(", ")}`);
      }
      for (const c of logCases) if (c.then !== undefined) await pusher.push(c.then.map((e) => pushed(c, e)), `hostile follow-up: ${c.id}`);
      await pusher.push([{ path: eventPath("h-final", 1), bytes: OK_TIMER() }], "a healthy run after everything");

      // Every valid timer fires; the last one proves the host is still following the log.
      const expectedFires = [
        ...eventCases.map((c) => ({ runId: runOf(c), timerId: "ok" })),
        ...logCases.flatMap((c) => c.fires.map((timerId) => ({ runId: runOf(c), timerId }))),
        { runId: "h-final", timerId: "ok" },
      ];
      const log = await pollFor(
        async () => {
          const read = await readDeploymentLog(dataDir, REPO);
          const skipsDone = logCases.every((c) => (c.skippedOnce ?? []).every((s) => skipsIn(read, runOf(c), s.timerId).length >= 1));
          return skipsDone && expectedFires.every((f) => firesIn(read, f.runId, f.timerId) >= 1) ? read : undefined;
        },
        30_000,
        200,
        "every valid timer fired",
      ).catch(async (error: unknown) => {
        const read = await readDeploymentLog(dataDir, REPO);
        const unfired = expectedFires.filter((f) => firesIn(read, f.runId, f.timerId) === 0);
        throw new Error(`${String(error)}: ${JSON.stringify(unfired)}\n${serve.lines().slice(-15).join("\n")}`);
      });
      const misses: Misses = [];
      for (const f of expectedFires) if (firesIn(log, f.runId, f.timerId) !== 1) misses.push(`${f.runId}/${f.timerId} fired ${firesIn(log, f.runId, f.timerId)} times`);
      for (const c of logCases) for (const t of c.neverFires) if (firesIn(log, runOf(c), t) > firesPushedBy(c, t)) misses.push(`${c.id}: ${t} fired`);
      for (const c of logCases) {
        for (const s of c.skippedOnce ?? []) {
          const skips = skipsIn(log, runOf(c), s.timerId);
          const first = skips[0];
          const fireAt = (JSON.parse(Buffer.from(logEntryBytes(c, c.commit[0] as LogEntry)).toString("utf8")) as { data: { fireAt: string } }).data.fireAt;
          if (skips.length !== 1 || first === undefined) misses.push(`${c.id}: ${s.timerId} has ${skips.length} TimerSkipped, not 1`);
          else if (Date.parse(first.firstMissed) !== Date.parse(fireAt)) misses.push(`${c.id}: firstMissed ${first.firstMissed}, pushed fireAt ${fireAt}`);
          else if (s.everyMs !== undefined && first.count !== (Date.parse(first.lastMissed) - Date.parse(first.firstMissed)) / s.everyMs + 1) {
            misses.push(`${c.id}: count ${first.count} for ${first.firstMissed}..${first.lastMissed}`);
          }
        }
        const state = log.runs.get(runOf(c))?.state;
        for (const t of c.armed ?? []) if (state?.pendingTimers.has(t) !== true) misses.push(`${c.id}: ${t} is not armed`);
        if (c.unconsumedSignals !== undefined) {
          const seen = (state?.unconsumedSignals ?? []).map((s) => ({ signalId: s.signalId, seq: s.seq }));
          if (JSON.stringify(seen) !== JSON.stringify(c.unconsumedSignals)) misses.push(`${c.id}: unconsumed signals ${JSON.stringify(seen)}`);
        }
      }
      // Reports arrive with the commits; give the last ones a moment.
      await sleep(500);
      const reported = badReports(serve);
      for (const c of pushedCases) misses.push(...missingReports(`${c.id} (live)`, expectedHostReports(c), reported));
      const failures = serve.lines().filter((l) => /"event":"(repo-failed|commit-failed|timer-rejected)"/.test(l));
      if (failures.length > 0) misses.push(`the host failed on hostile input: ${failures.slice(0, 5).join("\n")}`);
      expect(serve.done).toBe(false);
      expect(misses).toEqual([]);

      // Restart: recovery reads it all again, reports what is in the tip, fires nothing twice.
      serve.kill("SIGTERM");
      expect((await serve.exited).code).toBe(0);
      const firedBefore = [...log.runs.values()].reduce((n, r) => n + r.events.filter((e) => e.type === "TimerFired").length, 0);
      const again = spawnServe(dataDir, ["--poll-ms", "100"]);
      await again.waitForLine(/"event":"serving"/, 60_000);
      await sleep(1_500);
      const afterRestart = await readDeploymentLog(dataDir, REPO);
      const firedAfter = [...afterRestart.runs.values()].reduce((n, r) => n + r.events.filter((e) => e.type === "TimerFired").length, 0);
      expect(firedAfter).toBe(firedBefore);
      const recoveryMisses: Misses = [];
      for (const c of pushedCases) {
        // A rewrite or a deletion is history, which recovery (reading the tip) cannot see.
        if (c.kind === "log" && c.then !== undefined) continue;
        recoveryMisses.push(...missingReports(`${c.id} (recovery)`, expectedHostReports(c), badReports(again)));
      }
      expect(recoveryMisses).toEqual([]);
      again.kill("SIGTERM");
      expect((await again.exited).code).toBe(0);

      // The read commands take the log apart the same way, without a host.
      const check = await runCliInProcess(["check", "--data-dir", dataDir, "--repo", REPO, "--json"]);
      expect(check.code).toBe(1);
      const problems = (JSON.parse(check.stdout) as { problems: { path: string; code: string }[] }).problems;
      const checkMisses: Misses = [];
      for (const c of pushedCases) {
        const expected = c.kind === "event" ? [{ path: eventPath(runOf(c), 2), code: c.code }] : c.checkReports.map((r) => ({ path: resolvePath(c, r.path), code: r.code }));
        for (const r of expected) if (!problems.some((p) => p.path === r.path && p.code === r.code)) checkMisses.push(`${c.id}: check does not report ${r.path} (${r.code})`);
      }
      for (const c of eventCases.slice(0, 8)) {
        const shown = await runCliInProcess(["runs", "show", "--data-dir", dataDir, "--repo", REPO, "--run", runOf(c), "--json"]);
        const body = JSON.parse(shown.stdout) as { events: { seq: number }[]; bad: { path: string; code: string }[] };
        if (shown.code !== 0 || !body.bad.some((b) => b.path === eventPath(runOf(c), 2) && b.code === c.code) || body.events[0]?.seq !== 1) {
          checkMisses.push(`${c.id}: runs show gave exit ${shown.code} ${shown.stdout.slice(0, 200)}`);
        }
      }
      // A run whose events entry is no folder (a gitlink there) holds no log: runs show and
      // timers name it as unreadable (event_invalid at runs/<id>/events) and exit 1, as runs list does.
      const noLog = logCases.filter((c) => c.commit.some((e) => e.mode !== undefined && resolvePath(c, e.path) === `runs/${runOf(c)}/events`)).map(runOf);
      expect(noLog.length).toBeGreaterThan(0);
      for (const c of logCases) {
        if (c.then !== undefined) continue;
        const shown = await runCliInProcess(["runs", "show", "--data-dir", dataDir, "--repo", REPO, "--run", runOf(c), "--json"]);
        const inRun = expectedHostReports(c).filter((r) => r.path.startsWith(`runs/${runOf(c)}/`));
        // A case that leaves no run folder (a file where the folder would be) is no run at all.
        if (shown.code !== 0) {
          const code = errorCodeOf(shown.stderr);
          const expected = noLog.includes(runOf(c)) ? code === "event_invalid" : code === "run_not_found" && inRun.length === 0;
          if (!expected) checkMisses.push(`${c.id}: runs show gave exit ${shown.code} ${shown.stderr.slice(0, 200)}`);
          continue;
        }
        if (noLog.includes(runOf(c))) checkMisses.push(`${c.id}: runs show gave exit 0 for a run with no log`);
        const body = JSON.parse(shown.stdout) as { bad: { path: string }[]; problems: { path: string }[] };
        const listed = new Set([...body.bad, ...body.problems].map((b) => b.path));
        for (const r of inRun) if (!listed.has(r.path)) checkMisses.push(`${c.id}: runs show does not list ${r.path}`);
      }
      const timers = await runCliInProcess(["timers", "--data-dir", dataDir, "--repo", REPO, "--json"]);
      // The run with no log is named beside the others' timers; exit 1.
      expect(timers.code).toBe(1);
      const listedTimers = JSON.parse(timers.stdout) as { timers: { runId: string; timerId: string }[]; unreadableRuns: { runId: string; path: string; code: string }[] };
      expect(listedTimers.unreadableRuns.map((u) => [u.runId, u.path, u.code]).sort()).toEqual(noLog.map((runId) => [runId, `runs/${runId}/events`, "event_invalid"]).sort());
      const armed = listedTimers.timers;
      for (const c of logCases) for (const t of c.armed ?? []) if (!armed.some((a) => a.runId === runOf(c) && a.timerId === t)) checkMisses.push(`${c.id}: timers does not list ${t}`);
      expect(checkMisses).toEqual([]);
    } finally {
      await pusher.close();
    }
  }, 180_000);
});
