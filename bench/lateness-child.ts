/**
 * One lateness try in a fresh process, as a host process runs:
 * `lateness-child.ts <dataDir> <repoId> <timers> <baseMs> <leadMs> <windowMs> <fsync|none>`.
 * Starts a store and scheduler on the deployment (recovery arms every timer), then moves the
 * clock to `leadMs` before the first fireAt and records, for each TimerFired reported, the clock
 * at that moment minus its fireAt. Prints one JSON line: `{late: number[], commits}`.
 */
import { createOffsetClock, openRig } from "./scheduler-rig.js";

const [dataDir, repoId, timersArg, baseArg, leadArg, windowArg, durability] = process.argv.slice(2);
const timers = Number(timersArg);
const baseMs = Number(baseArg);
const leadMs = Number(leadArg);
const windowMs = Number(windowArg);
if (dataDir === undefined || repoId === undefined || ![timers, baseMs, leadMs, windowMs].every(Number.isFinite) || (durability !== "fsync" && durability !== "none")) {
  process.stderr.write("usage: lateness-child.ts <dataDir> <repoId> <timers> <baseMs> <leadMs> <windowMs> <fsync|none>\n");
  process.exit(2);
}

const clock = createOffsetClock(baseMs - 3_600_000 - Date.now());
const late: number[] = [];
let done!: () => void;
const allFired = new Promise<void>((resolve) => {
  done = resolve;
});
// maxArmMs only bounds how soon the queue notices the clock move below; arms for due-soon
// timers are exact whatever the cap.
const rig = openRig(dataDir, [repoId], clock.clock, (event) => {
  if (event.type !== "fired") return;
  late.push(clock.nowMs() - Date.parse(event.scheduledFor));
  if (late.length === timers) done();
}, { maxArmMs: 100 }, { durability });
await rig.scheduler.start();
const commits0 = rig.scheduler.stats().commits;
clock.offsetMs = baseMs - leadMs - Date.now();
let deadline: NodeJS.Timeout | undefined;
await Promise.race([
  allFired,
  new Promise<void>((resolve) => {
    deadline = setTimeout(resolve, leadMs + windowMs + 60_000);
  }),
]);
clearTimeout(deadline);
const commits = rig.scheduler.stats().commits - commits0;
await rig.close();
process.stdout.write(`${JSON.stringify({ late, commits })}\n`);
