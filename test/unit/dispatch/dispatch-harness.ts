/** A host on memfs with a FakeClock, and a log of its dispatch reports to wait on. */
import { readConsumerState, type ConsumerState } from "../../../seams/dispatch/consumer-state.js";
import type { DispatchReport } from "../../../seams/dispatch/dispatch-types.js";
import { createWorkflowHost, type WorkflowHost, type WorkflowHostOptions } from "../../../src/host/host.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createManualTimers } from "../../helpers/manual-timers.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

export interface ReportLog {
  readonly all: DispatchReport[];
  /** Resolves with the `n`-th (1-based) report matching `pred`, now or when it comes. */
  next(pred: (r: DispatchReport) => boolean, n?: number): Promise<DispatchReport>;
  push(r: DispatchReport): void;
}

export function createReportLog(): ReportLog {
  const all: DispatchReport[] = [];
  const waiters: { pred: (r: DispatchReport) => boolean; n: number; resolve: (r: DispatchReport) => void }[] = [];
  const check = (): void => {
    for (const w of [...waiters]) {
      const matches = all.filter(w.pred);
      const hit = matches[w.n - 1];
      if (hit !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };
  return {
    all,
    push(r) {
      all.push(r);
      check();
    },
    next(pred, n = 1) {
      return new Promise((resolve) => {
        waiters.push({ pred, n, resolve });
        check();
      });
    },
  };
}

export interface DispatchSetup {
  readonly fs: MemFs;
  readonly clock: FakeClock;
  readonly reports: ReportLog;
  make(extra?: Partial<WorkflowHostOptions>): WorkflowHost;
  state(host: WorkflowHost, repoId: string, consumer: string): Promise<ConsumerState>;
  stopAll(): Promise<void>;
}

export function dispatchSetup(): DispatchSetup {
  const fs = createMemFs();
  const clock = createFakeClock("2026-05-01T10:00:00.000Z");
  const reports = createReportLog();
  const hosts: WorkflowHost[] = [];
  return {
    fs,
    clock,
    reports,
    make(extra = {}) {
      const host = createWorkflowHost({
        dataDir: "/data",
        fs,
        clock: clock.clock,
        timers: clock.timers,
        watch: false,
        lock: { timers: createManualTimers() },
        onDispatchEvent: (r) => reports.push(r),
        ...extra,
      });
      hosts.push(host);
      return host;
    },
    async state(_host, repoId, consumer) {
      // A store of its own: the host's is closed once the host stops.
      const store = openWorkflowStore({ dataDir: "/data", fs, watch: false, clock: clock.clock });
      try {
        return await readConsumerState(store, null, { kind: WORKFLOW_RUN_KIND, id: repoId }, consumer);
      } finally {
        await store.close();
      }
    },
    async stopAll() {
      await Promise.all(hosts.splice(0).map((h) => h.stop()));
    },
  };
}
