/**
 * One signal appended into a long run: `deliver` (dedup by signalId, next seq, commit) on a run
 * of 100 000 events (5 000 with --quick), on a real disk. "cold" is the first append of a new
 * store (nothing of the log known in this process), "warm" the appends after it.
 * Baseline: the append as it was before, through `writeTreePreservingPrefix`, whose merge gets
 * every blob of the run (read, parsed through the parsed-event cache, deduplicated).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWorkflowHostSignalChannel } from "../seams/signals/signal-channel.js";
import type { RepoStore } from "../src/substrate/types.js";
import { signalReceivedEvent } from "../src/workflow/event-constructors.js";
import { serializeEvent } from "../src/workflow/events.js";
import { eventPath } from "../src/workflow/paths.js";
import { readRunLogFromFiles } from "../src/workflow/run-log.js";
import { WORKFLOW_RUN_KIND } from "../src/workflow/workflow-run-kind.js";
import type { BenchContext, Benchmark } from "./bench-context.js";
import { openStore } from "./scheduler-rig.js";
import { median } from "./stats.js";
import { ms, num, row } from "./table.js";

const RID = { kind: WORKFLOW_RUN_KIND, id: "dep" } as const;
const RUN = "big";
const clock = (): Date => new Date();

async function seed(dataDir: string, events: number): Promise<void> {
  const store = openStore(dataDir, clock, { watch: false });
  await store.initRepo(null, RID);
  const files = new Map<string, string>();
  const at = "2026-01-01T00:00:00.000Z";
  for (let seq = 1; seq <= events; seq++) {
    const body = seq % 100 === 0 ? { seq, type: "SignalReceived", signalName: "tick", signalId: `old-${seq}`, payload: { seq }, at } : { seq, type: "StepCompleted", at, data: { step: `s${seq}` } };
    files.set(eventPath(RUN, seq), JSON.stringify(body));
  }
  await store.writeTree(null, RID, "refs/heads/main", { files, message: `a run of ${events} events` });
  await store.close();
}

/** The append as it was: every blob of the run handed to the merge. */
async function naiveDeliver(store: RepoStore, signalId: string): Promise<void> {
  await store.writeTreePreservingPrefix(null, RID, "refs/heads/main", {
    preservePrefix: `runs/${RUN}/events/`,
    message: `Signal ${signalId}`,
    merge: (existing, _parent, _others, oids) => {
      const log = readRunLogFromFiles(RUN, existing, { oids });
      if (log.events.some((e) => e.type === "SignalReceived" && (e as { signalId?: string }).signalId === signalId)) return { files: existing };
      const seq = log.maxFileSeq + 1;
      const files = new Map<string, Uint8Array | string>(existing);
      files.set(`${seq}.json`, serializeEvent(signalReceivedEvent(seq, { signalName: "approve", signalId, payload: { ok: true }, at: new Date().toISOString() })));
      return { files };
    },
  });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

export const append: Benchmark = {
  name: "append",
  async run(ctx: BenchContext) {
    const events = ctx.quick ? 5_000 : 100_000;
    const warmRounds = ctx.quick ? 3 : 10;
    const root = await mkdtemp(join(tmpdir(), "workflow-host-bench-append-"));
    try {
      ctx.log(`append: seeding a run of ${num(events)} events`);
      await seed(join(root, "ours"), events);
      await seed(join(root, "naive"), events);

      const oursStore = openStore(join(root, "ours"), clock, { watch: false });
      const channel = createWorkflowHostSignalChannel({ repoStore: oursStore, principal: null, repoId: RID.id, runId: RUN, clock });
      const oursCold = await timed(() => channel.deliver("approve", { ok: true }, "new-0"));
      const oursWarm: number[] = [];
      for (let i = 1; i <= warmRounds; i++) oursWarm.push(await timed(() => channel.deliver("approve", { ok: true }, `new-${i}`)));
      await channel.stop();
      await oursStore.close();

      const naiveStore = openStore(join(root, "naive"), clock, { watch: false });
      const naiveCold = await timed(() => naiveDeliver(naiveStore, "new-0"));
      const naiveWarm: number[] = [];
      for (let i = 1; i <= Math.min(warmRounds, 3); i++) naiveWarm.push(await timed(() => naiveDeliver(naiveStore, `new-${i}`)));
      await naiveStore.close();

      const warm = median(oursWarm);
      const naiveWarmMedian = median(naiveWarm);
      return {
        name: "append",
        title: `Signal append into a ${num(events)}-event run (deliver: dedup, next seq, commit)`,
        baseline: "merge handed every blob of the run",
        rows: [
          row("cold: first append of a new store", { value: oursCold, text: ms(oursCold) }, { value: naiveCold, text: ms(naiveCold) }, "lower"),
          row(`warm: next appends (median of ${warmRounds})`, { value: warm, text: ms(warm) }, { value: naiveWarmMedian, text: ms(naiveWarmMedian) }, "lower"),
        ],
        notes: [
          "cold reads the whole log once (the signalId check needs every earlier signal); warm reads no earlier event: the log is kept under its events tree oid, and only files added since are read.",
          "both sides still rewrite the run's events tree (one entry per event) in every commit.",
        ],
      };
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  },
};
