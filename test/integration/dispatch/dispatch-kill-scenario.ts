/**
 * The dispatch kill scenario (the kill test runs it; `DISPATCH_KILLS` makes it longer):
 *
 * `timers` one-shots over `runs` runs fall due over `spreadMs` (a few are "poison": their
 * handler always fails). A child host with one consumer (see `./dispatch-kill-child.ts`) is
 * SIGKILLed `kills` times — some while starting, most while firing and dispatching — and
 * restarted each time; after each kill the consumer's durable state is read from its ref.
 * A last host then runs until every timer fired and the consumer's cursor reached main, and is
 * stopped with SIGTERM. Checked from the deliveries file, the log and the consumer ref:
 * - every TimerFired was handed to the handler at least once;
 * - an event recorded as done (covered by the cursor, or in `done`) when a host was killed is
 *   never handed over by a later host, and is still recorded as done after every later kill;
 * - a handover repeated (same event, same attempt number) is only one whose first handover was
 *   in a host that was then killed — counted and reported — never twice in one life; and of
 *   the handovers of one killed host at most `maxUnrecorded + concurrency` are
 *   repeated later (the bound the lane keeps, see consumer-lane.ts);
 * - parked are exactly the poison timers, each after `maxAttempts` attempts, and no attempt
 *   number passes `maxAttempts`;
 * - `git fsck --strict` finds nothing.
 */
import { appendFile, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readConsumerState } from "../../../seams/dispatch/consumer-state.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { subscribeKind } from "../../../src/workflow/subscribe-kind.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { fsckViolations } from "../reliability/deployment-log.js";
import { createPrng } from "../reliability/prng.js";
import { pollFor, sleep, spawnWatched, type WatchedChild } from "../reliability/serve-process.js";
import { KILL_CONCURRENCY, KILL_CONSUMER, KILL_MAX_ATTEMPTS, KILL_MAX_UNRECORDED, KILL_REPO } from "./kill-constants.js";

const CHILD = new URL("./dispatch-kill-child.ts", import.meta.url).pathname;
const rid = { kind: WORKFLOW_RUN_KIND, id: KILL_REPO };

export interface KillScenarioOptions {
  readonly root: string;
  readonly seed: number;
  readonly kills?: number;
  readonly timers?: number;
  readonly runs?: number;
  readonly spreadMs?: number;
  readonly poison?: number;
  readonly log?: (line: string) => void;
}

export interface KillReport {
  readonly kills: number;
  readonly killsWhileStarting: number;
  readonly fired: number;
  readonly handovers: number;
  /** Handovers repeated after a kill (the same event and attempt number handed over again). */
  readonly duplicates: number;
  /** The most handovers of one killed host that were repeated later. */
  readonly mostRepeatedOfOneLife: number;
  readonly parked: number;
  readonly violations: readonly string[];
}

interface Snapshot {
  readonly life: number;
  readonly cursor: string | null;
  readonly done: ReadonlySet<string>;
}

interface Handover {
  readonly life: number;
  readonly id: string;
  readonly key: string;
  readonly attempt: number;
}

async function readState(dataDir: string): Promise<Snapshot & { parked: Map<string, { attempts: number; key: string }> }> {
  const store = openWorkflowStore({ dataDir, watch: false });
  try {
    const state = await readConsumerState(store, null, rid, KILL_CONSUMER);
    const parked = new Map([...state.parked].map(([id, p]) => [id, { attempts: p.attempts, key: p.idempotencyKey }]));
    return { life: -1, cursor: state.cursor, done: state.done, parked };
  } finally {
    await store.close();
  }
}

/** Every TimerFired of the deployment with the index of the commit that added it, and every commit's index. */
async function readFires(dataDir: string): Promise<{ fires: Map<string, { key: string; commit: number }>; commitIndex: Map<string, number>; tip: string | null }> {
  const store = openWorkflowStore({ dataDir, watch: false });
  try {
    const tip = await store.resolveRef(null, rid, "main");
    const commitIndex = new Map<string, number>();
    const fires = new Map<string, { key: string; commit: number }>();
    if (tip === null) return { fires, commitIndex, tip };
    const controller = new AbortController();
    const events = subscribeKind(store, null, rid, "main", undefined, {
      from: "genesis",
      kinds: ["TimerFired"],
      signal: controller.signal,
      onCommit: (commit) => {
        if (!commitIndex.has(commit.commitSha)) commitIndex.set(commit.commitSha, commitIndex.size);
        if (commit.commitSha === tip) controller.abort();
      },
    });
    for await (const found of events) {
      if (!commitIndex.has(found.commitSha)) commitIndex.set(found.commitSha, commitIndex.size);
      const data = (found.event as { data: { timerId: string; scheduledFor?: string } }).data;
      fires.set(`${found.runId}/${found.seq}`, { key: `${KILL_REPO}/${found.runId}/${data.timerId}/${data.scheduledFor ?? ""}`, commit: commitIndex.get(found.commitSha) as number });
      if (controller.signal.aborted) break;
    }
    return { fires, commitIndex, tip };
  } finally {
    await store.close();
  }
}

export async function runDispatchKillScenario(opts: KillScenarioOptions): Promise<KillReport> {
  const kills = opts.kills ?? 30;
  const timers = opts.timers ?? 300;
  const runs = opts.runs ?? 30;
  const spreadMs = opts.spreadMs ?? 25_000;
  const poison = opts.poison ?? 3;
  const log = opts.log ?? (() => {});
  const prng = createPrng(opts.seed);
  const dataDir = join(opts.root, "data");
  const deliveries = join(opts.root, "deliveries.jsonl");
  await writeFile(deliveries, "");

  // Set-up: the deployment and its timers, written by a host that then stops.
  const setup = createWorkflowHost({ dataDir, watch: false, durability: "fsync" });
  await setup.start();
  await setup.createDeployment(KILL_REPO);
  const runtime = setup.runtime(KILL_REPO);
  const start = Date.now() + 2_000;
  for (let i = 0; i < timers; i += 1) {
    const timerId = i < poison ? `poison-${i}` : `t-${i}`;
    await runtime.setTimer(`run-${i % runs}`, { timerId, fireAt: new Date(start + Math.floor((i * spreadMs) / timers)).toISOString() });
  }
  await setup.stop();
  log(`${timers} timers over ${runs} runs, due over ${spreadMs} ms`);

  const snapshots: Snapshot[] = [];
  let killsWhileStarting = 0;
  let life = 0;
  const spawnLife = (): WatchedChild => spawnWatched(CHILD, [dataDir, deliveries, String(life), String(opts.seed)]);
  for (; life < kills; life += 1) {
    const child = spawnLife();
    if (life % 6 === 5) {
      // Killed while starting (recovering, reading the consumer ref).
      await sleep(prng.int(0, 1_200));
      killsWhileStarting += child.lines().includes("ready") ? 0 : 1;
    } else {
      await child.waitForLine(/^ready$/, 60_000);
      await sleep(prng.int(50, 700));
    }
    child.kill("SIGKILL");
    const exit = await child.exited;
    if (exit.signal !== "SIGKILL") throw new Error(`life ${life} ended by itself (${JSON.stringify(exit)}): ${child.lines().slice(-10).join("\n")}`);
    await appendFile(join(opts.root, "children.log"), `life ${life}\n${child.lines().join("\n")}\n`);
    const state = await readState(dataDir);
    snapshots.push({ life, cursor: state.cursor, done: state.done });
  }
  log(`${kills} kills done (${killsWhileStarting} while starting); last host runs to the end`);

  const last = spawnLife();
  await last.waitForLine(/^ready$/, 60_000);
  await pollFor(
    async () => {
      const { fires, tip } = await readFires(dataDir);
      if (fires.size < timers) return undefined;
      const state = await readState(dataDir);
      return state.cursor === tip && state.done.size === 0 ? true : undefined;
    },
    spreadMs + 120_000,
    250,
    "every timer fired and dispatched",
  );
  last.kill("SIGTERM");
  const lastExit = await last.exited;

  const violations: string[] = [];
  if (lastExit.code !== 0) violations.push(`the last host exited ${JSON.stringify(lastExit)}: ${last.lines().slice(-10).join("\n")}`);
  const { fires, commitIndex } = await readFires(dataDir);
  const handovers: Handover[] = [];
  for (const line of (await readFile(deliveries, "utf8")).split("\n")) {
    if (line === "") continue;
    try {
      handovers.push(JSON.parse(line) as Handover);
    } catch {
      // A line torn by a kill: that handover was in flight and is not counted.
    }
  }
  const byId = new Map<string, Handover[]>();
  for (const h of handovers) byId.set(h.id, [...(byId.get(h.id) ?? []), h]);

  if (fires.size !== timers) violations.push(`${fires.size} TimerFired in the log, expected ${timers}`);
  for (const [id, fire] of fires) {
    const got = byId.get(id);
    if (got === undefined) violations.push(`${id} (${fire.key}) was never handed over`);
    else if (got.some((h) => h.key !== fire.key)) violations.push(`${id} was handed over with key ${got[0]?.key}, expected ${fire.key}`);
  }
  for (const id of byId.keys()) if (!fires.has(id)) violations.push(`${id} was handed over but is no TimerFired`);

  for (const snap of snapshots) {
    const cursorIndex = snap.cursor === null ? -1 : (commitIndex.get(snap.cursor) ?? Number.NaN);
    if (Number.isNaN(cursorIndex)) violations.push(`after kill ${snap.life} the cursor ${snap.cursor} is not on main`);
    for (const [id, fire] of fires) {
      if (!(fire.commit <= cursorIndex || snap.done.has(id))) continue;
      const later = (byId.get(id) ?? []).filter((h) => h.life > snap.life);
      if (later.length > 0) violations.push(`${id} was recorded as done when life ${snap.life} was killed, yet handed over again in life ${later[0]?.life}`);
    }
  }
  // A record once committed is never lost by a later checkpoint, handed over again or not.
  for (let i = 1; i < snapshots.length; i += 1) {
    const [before, after] = [snapshots[i - 1] as Snapshot, snapshots[i] as Snapshot];
    const covers = (snap: Snapshot, id: string, commit: number): boolean => snap.done.has(id) || commit <= (snap.cursor === null ? -1 : (commitIndex.get(snap.cursor) ?? Number.NaN));
    const lost = [...fires].filter(([id, fire]) => covers(before, id, fire.commit) && !covers(after, id, fire.commit)).map(([id]) => id);
    if (lost.length > 0) violations.push(`${lost.length} events recorded as done when life ${before.life} was killed were no longer when life ${after.life} was (${lost.slice(0, 5).join(", ")})`);
  }

  let duplicates = 0;
  const repeatedOfLife = new Map<number, number>();
  for (const [, list] of byId) {
    const lastLifeOf = new Map<number, number>();
    for (const h of list) lastLifeOf.set(h.attempt, Math.max(lastLifeOf.get(h.attempt) ?? -1, h.life));
    for (const h of list) if ((lastLifeOf.get(h.attempt) ?? -1) > h.life) repeatedOfLife.set(h.life, (repeatedOfLife.get(h.life) ?? 0) + 1);
  }
  const bound = KILL_MAX_UNRECORDED + KILL_CONCURRENCY;
  for (const [life, count] of repeatedOfLife) if (count > bound) violations.push(`${count} handovers of life ${life} were repeated later; at most ${bound} may be`);
  const mostRepeatedOfOneLife = Math.max(0, ...repeatedOfLife.values());
  for (const [id, list] of byId) {
    const seen = new Map<number, number>();
    for (const h of list) {
      const before = seen.get(h.attempt);
      if (before !== undefined) {
        duplicates += 1;
        if (before === h.life) violations.push(`${id} attempt ${h.attempt} was handed over twice in life ${h.life}`);
        if (before >= kills) violations.push(`${id} attempt ${h.attempt} repeated after the last host, which was not killed`);
      }
      seen.set(h.attempt, h.life);
      if (h.attempt > KILL_MAX_ATTEMPTS) violations.push(`${id} was handed over with attempt ${h.attempt} > maxAttempts ${KILL_MAX_ATTEMPTS}`);
    }
  }

  const final = await readState(dataDir);
  const poisonIds = [...fires].filter(([, f]) => /\/poison-\d+\//.test(f.key)).map(([id]) => id).sort();
  if (JSON.stringify([...final.parked.keys()].sort()) !== JSON.stringify(poisonIds)) violations.push(`parked ${JSON.stringify([...final.parked.keys()].sort())}, expected the poison timers ${JSON.stringify(poisonIds)}`);
  for (const [id, p] of final.parked) {
    if (p.attempts !== KILL_MAX_ATTEMPTS) violations.push(`${id} parked after ${p.attempts} attempts, not ${KILL_MAX_ATTEMPTS}`);
    const attempts = new Set((byId.get(id) ?? []).map((h) => h.attempt));
    if (!attempts.has(KILL_MAX_ATTEMPTS)) violations.push(`${id} parked without its attempt ${KILL_MAX_ATTEMPTS} handed over`);
  }
  violations.push(...(await fsckViolations(join(dataDir, "deployments", `${KILL_REPO}.git`))));
  const report: KillReport = { kills, killsWhileStarting, fired: fires.size, handovers: handovers.length, duplicates, mostRepeatedOfOneLife, parked: final.parked.size, violations };
  log(JSON.stringify({ ...report, violations: violations.length }));
  return report;
}
