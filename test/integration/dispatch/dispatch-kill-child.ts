/**
 * One life of the dispatch kill test: a host with durable writes and one consumer whose handler
 * appends each handover to a file (and fsyncs it) before doing anything else, then works for a
 * few milliseconds. Timers whose id starts with "poison" always fail; a few others fail their
 * first attempt. Prints "ready" once started; stops gracefully on SIGTERM.
 *
 * Usage: node --import tsx dispatch-kill-child.ts <dataDir> <deliveriesFile> <life> <seed>
 */
import { fsyncSync, openSync, writeSync } from "node:fs";
import { createWorkflowHost } from "../../../src/host/host.js";
import { stopOnSignals } from "../../../src/host/stop-on-signals.js";
import { createPrng } from "../reliability/prng.js";
import { KILL_CONCURRENCY, KILL_CONSUMER, KILL_MAX_ATTEMPTS, KILL_MAX_UNRECORDED } from "./kill-constants.js";

const [dataDir, file, lifeText, seedText] = process.argv.slice(2);
if (dataDir === undefined || file === undefined || lifeText === undefined || seedText === undefined) {
  process.stderr.write("usage: dispatch-kill-child.ts <dataDir> <deliveriesFile> <life> <seed>\n");
  process.exit(2);
}
const life = Number(lifeText);
const prng = createPrng(Number(seedText) * 1_000 + life);
const fd = openSync(file, "a");

const host = createWorkflowHost({
  dataDir,
  durability: "fsync",
  watch: { pollMs: 100, chokidar: false },
  discoverEveryMs: 200,
  lock: { staleMs: 2_000 },
  // Problems go to stderr, so a failed run can be explained from the child's last lines.
  logger: {
    info: () => {},
    warn: (message) => process.stderr.write(`warn ${message}\n`),
    error: (message) => process.stderr.write(`error ${message}\n`),
  },
});
host.dispatch({
  name: KILL_CONSUMER,
  filter: { types: ["TimerFired"] },
  concurrency: KILL_CONCURRENCY,
  maxUnrecorded: KILL_MAX_UNRECORDED,
  maxAttempts: KILL_MAX_ATTEMPTS,
  backoff: [20, 40],
  timeoutMs: 5_000,
  async handler(d) {
    writeSync(fd, `${JSON.stringify({ life, id: `${d.runId}/${d.seq}`, key: d.idempotencyKey, attempt: d.attempt })}\n`);
    fsyncSync(fd);
    await new Promise((resolve) => setTimeout(resolve, Math.floor(prng.next() * 15)));
    const timerId = String((d.event as { data?: { timerId?: unknown } }).data?.timerId);
    if (timerId.startsWith("poison")) throw new Error(`${timerId} always fails`);
    if (timerId.endsWith("7") && d.attempt === 1) throw new Error(`${timerId} fails its first attempt`);
  },
});
const signals = stopOnSignals(host);
await host.start();
process.stdout.write("ready\n");
await host.stopped;
await signals.stopped;
process.exit(0);
