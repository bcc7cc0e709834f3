/**
 * pg-boss's side of the peer section (peer.ts): the same burst and spread workloads, driven
 * through pg-boss 10's public API on a loopback PostgreSQL. Used in the bench process (a client
 * that has fetched before: warm) and in a fresh process per try (boss-burst-child.ts: cold),
 * so each of our rows is set against pg-boss in the same state.
 */
import { runIdOf } from "./repo-generator.js";
import { sleep } from "./stats.js";

/** The parts of pg-boss 10 used here. */
export interface Boss {
  start(): Promise<unknown>;
  stop(opts: { graceful: boolean; wait: boolean }): Promise<void>;
  on(event: "error", handler: (error: unknown) => void): unknown;
  createQueue(name: string): Promise<void>;
  insert(jobs: { name: string; data?: object; startAfter?: Date }[]): Promise<void>;
  fetch(name: string, opts: { batchSize: number }): Promise<{ id: string }[]>;
  complete(name: string, ids: string[]): Promise<void>;
  work(name: string, opts: { batchSize: number; pollingIntervalSeconds: number }, handler: (jobs: { data: object }[]) => Promise<void>): Promise<string>;
}
export type BossClass = new (opts: { connectionString: string; max?: number }) => Boss;

/** pg-boss's class, or why it could not be loaded (it is a dev dependency). */
export async function loadBoss(): Promise<BossClass | string> {
  try {
    const mod = (await import("pg-boss")) as unknown as { default: BossClass };
    return mod.default;
  } catch (error) {
    return `pg-boss could not be loaded (${error instanceof Error ? error.message : String(error)})`;
  }
}

/**
 * One burst: `jobs` jobs inserted ahead of time (untimed), all due at one instant a few seconds
 * later (like our timers), then fetched `batchSize` at a time and completed until all were.
 * @param queue a queue name no other try uses (a new queue per try)
 * @returns jobs per second, from the jobs' `startAfter` to the last completion
 */
export async function bossBurst(Boss: BossClass, url: string, queue: string, jobs: number, batchSize: number): Promise<number> {
  const boss = new Boss({ connectionString: url, max: 4 });
  boss.on("error", () => undefined);
  await boss.start();
  try {
    await boss.createQueue(queue);
    const dueAt = new Date(Date.now() + 3_000 + Math.ceil(jobs / 5_000) * 1_000);
    for (let i = 0; i < jobs; i += 5_000) {
      await boss.insert(Array.from({ length: Math.min(5_000, jobs - i) }, (_, k) => ({ name: queue, data: { runId: runIdOf(i + k) }, startAfter: dueAt })));
    }
    return await deliverAll(boss, queue, jobs, batchSize, dueAt.getTime());
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

/**
 * Waits until `dueAtMs`, then fetches and completes batches until `jobs` were delivered; jobs/s
 * from `dueAtMs` (or from now, when inserting ran past it).
 */
async function deliverAll(boss: Boss, name: string, jobs: number, batchSize: number, dueAtMs: number): Promise<number> {
  await sleep(Math.max(0, dueAtMs - Date.now() + 5));
  const t0 = Date.now();
  const fromMs = Math.max(dueAtMs, t0 - 5);
  let done = 0;
  while (done < jobs) {
    const batch = await boss.fetch(name, { batchSize });
    if (batch.length === 0) {
      if (Date.now() - t0 > 120_000) break;
      continue;
    }
    await boss.complete(name, batch.map((j) => j.id));
    done += batch.length;
  }
  return (done / Math.max(1, Date.now() - fromMs)) * 1_000;
}

/**
 * Spread: `timers` jobs due evenly over `windowMs`, handed to a `work()` handler (batchSize 100,
 * polling every 0.5 s, pg-boss's minimum).
 * @returns each job's lateness, ms (handed to the handler − due)
 */
export async function bossSpread(Boss: BossClass, url: string, queue: string, timers: number, windowMs: number): Promise<number[]> {
  const boss = new Boss({ connectionString: url, max: 4 });
  boss.on("error", () => undefined);
  await boss.start();
  const late: number[] = [];
  try {
    await boss.createQueue(queue);
    const startMs = Date.now() + 3_000 + Math.ceil(timers / 5_000) * 1_000;
    const dueOf = (i: number): number => startMs + Math.round((i * windowMs) / timers);
    for (let i = 0; i < timers; i += 5_000) {
      await boss.insert(Array.from({ length: Math.min(5_000, timers - i) }, (_, k) => ({ name: queue, data: { dueMs: dueOf(i + k) }, startAfter: new Date(dueOf(i + k)) })));
    }
    let finished!: () => void;
    const all = new Promise<void>((resolve) => {
      finished = resolve;
    });
    await boss.work(queue, { batchSize: 100, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      const now = Date.now();
      for (const job of jobs) late.push(now - (job.data as { dueMs: number }).dueMs);
      if (late.length >= timers) finished();
    });
    await Promise.race([all, sleep(startMs - Date.now() + windowMs + 30_000)]);
    return late;
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}
