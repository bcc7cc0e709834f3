/**
 * One pg-boss burst in a fresh process, the counterpart of burst-child.ts for the peer section:
 * `boss-burst-child.ts <postgresUrl> <queue> <jobs> <batchSize>`. Loads pg-boss, connects,
 * inserts the jobs (untimed, as our recovery is), and times from their `startAfter` to the last
 * completion (peer-boss.ts bossBurst), with pg-boss's fetch and complete running for the first
 * time in the process, as our fire path does in burst-child.ts. Prints one JSON line:
 * `{jobsPerSec}`.
 */
import { bossBurst, loadBoss } from "./peer-boss.js";

const [url, queue, jobsArg, batchArg] = process.argv.slice(2);
const jobs = Number(jobsArg);
const batchSize = Number(batchArg);
if (url === undefined || queue === undefined || !Number.isInteger(jobs) || jobs < 1 || !Number.isInteger(batchSize) || batchSize < 1) {
  process.stderr.write("usage: boss-burst-child.ts <postgresUrl> <queue> <jobs> <batchSize>\n");
  process.exit(2);
}
const Boss = await loadBoss();
if (typeof Boss === "string") {
  process.stderr.write(`${Boss}\n`);
  process.exit(1);
}
const jobsPerSec = await bossBurst(Boss, url, queue, jobs, batchSize);
process.stdout.write(`${JSON.stringify({ jobsPerSec })}\n`);
