/**
 * `GET /v1/timers` and `GET …/timers` answer a deployment the host serves and has recovered from
 * the scheduler's memory (design notes §76): the same answer as the fold of its logs at the
 * commit it names, without reading one event. A deployment the host does not serve (leased
 * elsewhere, not discovered yet) or has not recovered is folded as before.
 *
 * The deployment is real (git CLI, loose objects): one-shots, cron series (one paused with a
 * reason), a signal wait's timeout, an ended run, runs with a lost event object, a torn
 * `events/` folder and an `events` entry that is a file, then a run committed by another writer
 * while the host runs (the tail picks it up).
 */
import { rm, truncate } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createWorkflowHostScheduler } from "../../../seams/scheduler/scheduler.js";
import type { WorkflowHostScheduler } from "../../../seams/scheduler/scheduler-types.js";
import { listPendingTimers, listServedPendingTimers } from "../../../src/host/list-pending-timers.js";
import type { WorkflowHost } from "../../../src/host/host.js";
import { createHttpHandler } from "../../../src/http/http-handler.js";
import { parseTokenFile } from "../../../src/http/http-tokens.js";
import type { CommittedReads, RepoStore } from "../../../src/substrate/types.js";
import { createHostMonitor } from "../../../src/http/host-monitor.js";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { WORKFLOW_RUN_KIND, workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { gitAt } from "../../helpers/git-cli.js";
import { event, GitWriter, started, usePlumbingDeployments } from "../../helpers/plumbing-deployment.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { ADMIN_TOKEN, startHttpHarness, TOKEN_FILE, type HttpHarness } from "./http-harness.js";

class DamagingWriter extends GitWriter {
  async lose(oid: string): Promise<void> {
    await rm(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)));
  }
  async tear(oid: string): Promise<void> {
    await truncate(join(this.gitdir, "objects", oid.slice(0, 2), oid.slice(2)), 10);
  }
  async tip(): Promise<string> {
    return (await gitAt(this.gitdir, ["rev-parse", "main"])).trim();
  }
  /** Commits run `name` (folder `tree`) on top of main beside the runs main holds, as another writer would. */
  async addRun(name: string, tree: string): Promise<string> {
    const parent = await this.tip();
    const listing = (await gitAt(this.gitdir, ["ls-tree", "main", "runs/"])).trim().split("\n");
    const entries = listing.map((line) => {
      const [meta, path] = line.split("\t") as [string, string];
      const [mode, , oid] = meta.split(" ") as [string, string, string];
      return { mode: mode === "040000" ? "40000" : mode, name: path.replace(/^runs\//, ""), oid };
    });
    const runsTree = await this.tree([...entries, { mode: "40000", name, oid: tree }]);
    const root = await this.tree([{ mode: "40000", name: "runs", oid: runsTree }]);
    const commit = (await gitAt(this.gitdir, ["commit-tree", root, "-p", parent, "-m", "another writer"])).trim();
    await gitAt(this.gitdir, ["update-ref", "refs/heads/main", commit, parent]);
    return commit;
  }
}

const deployment = usePlumbingDeployments(useTempDirs("wh-timers-served-"), (gitdir) => new DamagingWriter(gitdir));

/** Far enough ahead that the host (on the real clock) fires nothing while a test runs. */
const FAR = "2099-01-01T00:00:00.000Z";
const LATER = "2099-06-01T00:00:00.000Z";
/** The instant every answer's dueInMs counts from (the handler's clock). */
const NOW = new Date("2030-01-01T00:00:00.000Z");
const put = (body: unknown): RequestInit => ({ method: "PUT", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
const post = (body: unknown): RequestInit => ({ method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });

/**
 * Deployment `d` written with git's plumbing: `r-wait` (a signal wait's timeout timer with a
 * step), `r-done` (ended with a timer set before), `r-gap` (a one-shot; its seq-2 event lost),
 * `r-torn` (its `events/` folder truncated), `r-file` (its `events` entry a file).
 */
async function seeded(): Promise<Awaited<ReturnType<typeof deployment>>> {
  const d = await deployment();
  const wait = await d.w.run([started(), event(2, "TimerSet", { timerId: "wait:approval:1", fireAt: FAR, stepId: "approve" })]);
  const done = await d.w.run([started(), event(2, "TimerSet", { timerId: "t", fireAt: FAR }), event(3, "RunCompleted", {})]);
  const gap = await d.w.run([started(), event(2, "TimerSet", { timerId: "g", fireAt: FAR }), event(3, "TimerSet", { timerId: "h", fireAt: LATER })]);
  const torn = await d.w.run([started(), event(2, "TimerSet", { timerId: "u", fireAt: FAR })]);
  const fileBlob = await d.w.blob("not a folder");
  const file = await d.w.tree([{ mode: "100644", name: "events", oid: fileBlob }]);
  await d.w.commit({ "r-wait": wait.tree, "r-done": done.tree, "r-gap": gap.tree, "r-torn": torn.tree, "r-file": file });
  await d.w.lose(gap.blobs[1] as string);
  await d.w.tear(torn.events);
  await d.store.close();
  return d;
}

/** A second HTTP face of the same host whose scheduler serves nothing: every deployment is folded. */
function foldingApp(host: WorkflowHost): ReturnType<typeof createHttpHandler> {
  const scheduler = new Proxy(host.scheduler, { get: (target, key) => (key === "servedPendingTimers" ? () => Promise.resolve(null) : Reflect.get(target, key)) });
  const folding = new Proxy(host, { get: (target, key) => (key === "scheduler" ? scheduler : Reflect.get(target, key)) });
  return createHttpHandler(folding, { tokens: parseTokenFile(TOKEN_FILE), monitor: createHostMonitor(), clock: () => NOW });
}

type Answer = { now: string; timers: Record<string, unknown>[]; failedRepos: unknown[]; unreadableRuns: unknown[]; deployments: { repoId: string; commitSha: string | null; source: string }[] };

/** The answer with where each part came from left out (the rest must be equal). */
function normalized(answer: Answer): unknown {
  return { ...answer, deployments: answer.deployments.map(({ repoId, commitSha }) => ({ repoId, commitSha })) };
}

async function getJson(h: HttpHarness, path: string): Promise<Answer> {
  const response = await h.request(path);
  expect(response.status).toBe(200);
  return (await response.json()) as Answer;
}

/**
 * Counts what every committed reads the store opens is asked while `counting` holds (reads
 * opened, folders listed, blobs and trees read): a listing from memory asks none of it. (The
 * store's parsed-event cache can serve events without a blob read: folders are counted too.)
 */
function countLogReads(store: RepoStore): { reads: () => number; stop: () => void } {
  let reads = 0;
  let counting = true;
  const wrap = (r: CommittedReads): CommittedReads =>
    new Proxy(r, {
      get(target, key) {
        const value = Reflect.get(target, key) as unknown;
        if (typeof value !== "function") return value;
        if (key === "scan") return () => wrap((value as () => CommittedReads).call(target));
        return (...args: unknown[]) => {
          if (counting) reads += 1;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const original = store.openCommittedReads.bind(store);
  (store as { openCommittedReads: RepoStore["openCommittedReads"] }).openCommittedReads = async (...args) => {
    if (counting) reads += 1;
    return wrap(await original(...args));
  };
  return {
    reads: () => reads,
    stop: () => {
      counting = false;
    },
  };
}

/** The answer for `d` from the scheduler once it names `commitSha` (the tail applies another writer's commit after a poke). */
async function servedAt(h: HttpHarness, commitSha: string): Promise<Answer> {
  for (let turn = 0; turn < 500; turn += 1) {
    const answer = await getJson(h, "/v1/deployments/d/timers");
    // A request made while the tail is behind the tip for a while is folded: asked again.
    if (answer.deployments[0]?.commitSha === commitSha && answer.deployments[0].source === "scheduler") return answer;
    h.host.store.poke({ kind: WORKFLOW_RUN_KIND, id: "d" });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`the host never served d at ${commitSha}`);
}

describe("pending timers from the scheduler's memory", () => {
  it("equal the fold of the logs at the commit the answer names, for every kind of run, after another writer's commit too", async () => {
    const d = await seeded();
    const h = await startHttpHarness(d.dataDir, [], { clock: () => NOW });
    try {
      expect((await h.request("/v1/deployments/d/runs/r-one/timers/a", put({ fireAt: FAR }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-one/timers/b", put({ fireAt: LATER, stepId: "s1" }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-cron/timers/hourly", put({ cron: "0 * * * *" }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-cron/timers/daily", put({ cron: "30 9 * * 1-5", timezone: "Europe/Berlin", misfire: "latest" }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-cron/schedules/daily/pause", post({ reason: "quarter close" }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-paused/timers/weekly", put({ cron: "0 8 * * 1" }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-paused/schedules/weekly/pause", post({}))).status).toBe(200);
      // Another writer adds a run with a one-shot behind the host's back.
      const late = await d.w.run([started(), event(2, "TimerSet", { timerId: "late", fireAt: FAR })]);
      const tip = await d.w.addRun("r-late", late.tree);

      const served = await servedAt(h, tip);
      const folded = (await (await foldingApp(h.host).inject({ method: "GET", url: "/v1/deployments/d/timers", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as Answer;
      expect(served.deployments).toEqual([{ repoId: "d", commitSha: tip, source: "scheduler" }]);
      expect(folded.deployments).toEqual([{ repoId: "d", commitSha: tip, source: "log" }]);
      expect(normalized(served)).toEqual(normalized(folded));
      // What the comparison covers: every kind of run is in it.
      expect(served.timers.map((t) => `${String(t["runId"])}/${String(t["timerId"])}`).sort()).toEqual(["r-cron/daily", "r-cron/hourly", "r-late/late", "r-one/a", "r-one/b", "r-paused/weekly", "r-wait/wait:approval:1"]);
      expect(served.timers.find((t) => t["timerId"] === "daily")).toMatchObject({ cron: "30 9 * * 1-5", timezone: "Europe/Berlin", misfire: "latest", paused: true, nextTicks: expect.any(Array) });
      expect(served.timers.find((t) => t["timerId"] === "wait:approval:1")).toMatchObject({ stepId: "approve", fireAt: FAR });
      expect((served.unreadableRuns as { runId: string; code: string }[]).map((u) => `${u.runId} ${u.code}`)).toEqual(["r-file event_invalid", "r-gap object_missing", "r-torn object_corrupt"]);

      // The whole-host route: the same, and the same as its fold.
      const all = await getJson(h, "/v1/timers");
      const allFolded = (await (await foldingApp(h.host).inject({ method: "GET", url: "/v1/timers", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as Answer;
      expect(all.deployments).toEqual([{ repoId: "d", commitSha: tip, source: "scheduler" }]);
      expect(normalized(all)).toEqual(normalized(allFolded));
    } finally {
      await h.close();
    }
    // A restart restores the runs from the recovery index written at stop (rows, not records): the same answer.
    const again = await startHttpHarness(d.dataDir, [], { clock: () => NOW });
    try {
      const tip = await d.w.tip();
      const served = await servedAt(again, tip);
      const folded = (await (await foldingApp(again.host).inject({ method: "GET", url: "/v1/deployments/d/timers", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as Answer;
      expect(served.deployments).toEqual([{ repoId: "d", commitSha: tip, source: "scheduler" }]);
      expect(normalized(served)).toEqual(normalized(folded));
      expect(served.timers).toHaveLength(7);
    } finally {
      await again.close();
    }
  });

  it("a served deployment is listed without opening its log: no reads, folders or blobs; a folded one reads them", async () => {
    // Undamaged (the host re-reads a damaged run's lost objects now and then: blob reads of its own).
    const d = await deployment();
    const wait = await d.w.run([started(), event(2, "TimerSet", { timerId: "wait:approval:1", fireAt: FAR, stepId: "approve" })]);
    await d.w.commit({ "r-wait": wait.tree });
    await d.store.close();
    const h = await startHttpHarness(d.dataDir, []);
    try {
      expect((await h.request("/v1/deployments/d/runs/r-one/timers/a", put({ fireAt: FAR }))).status).toBe(200);
      expect((await h.request("/v1/deployments/d/runs/r-cron/timers/hourly", put({ cron: "0 * * * *" }))).status).toBe(200);
      // Once the tail has applied the host's own commits (it reads nothing after that).
      await servedAt(h, await d.w.tip());
      const counter = countLogReads(h.host.store);
      const served = await getJson(h, "/v1/deployments/d/timers");
      const servedReads = counter.reads();
      const folded = (await (await foldingApp(h.host).inject({ method: "GET", url: "/v1/deployments/d/timers", headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as Answer;
      counter.stop();
      expect(served.deployments[0]?.source).toBe("scheduler");
      expect(served.timers.length).toBeGreaterThan(0);
      expect(servedReads).toBe(0);
      // The counter sees the fold's reads: the zero above is the fast path's, not a blind counter.
      expect(folded.deployments[0]?.source).toBe("log");
      expect(counter.reads()).toBeGreaterThan(0);
    } finally {
      await h.close();
    }
  });

  it("a deployment the host does not serve yet (created behind its back, not discovered) is folded, named as read from the log", async () => {
    const d = await seeded();
    const h = await startHttpHarness(d.dataDir, []);
    try {
      // Made in the store directly: the host discovers deployments every 2 s (default), and serves it only then.
      await h.host.store.initRepo(null, { kind: WORKFLOW_RUN_KIND, id: "fresh" });
      expect((await h.request("/v1/deployments/fresh/runs/r1/timers/t", put({ fireAt: FAR }))).status).toBe(200);
      const answer = await getJson(h, "/v1/timers");
      const fresh = answer.deployments.find((x) => x.repoId === "fresh");
      if (fresh?.source === "scheduler") return; // discovered meanwhile on a slow machine: nothing left to show here
      expect(fresh).toMatchObject({ source: "log", commitSha: await gitAt(join(d.dataDir, "deployments", "fresh.git"), ["rev-parse", "main"]).then((s) => s.trim()) });
      expect(answer.deployments.find((x) => x.repoId === "d")?.source).toBe("scheduler");
      expect(answer.timers.filter((t) => t["repoId"] === "fresh").map((t) => t["timerId"])).toEqual(["t"]);
    } finally {
      await h.close();
    }
  });
});

describe("a deployment whose recovery has not completed", () => {
  it("is not served from memory (null: fold it) until its recovery completes; then the served answer equals the fold", async () => {
    const d = await seeded();
    const store = createRepoStore({ dataDir: d.dataDir, kindHandlers: [workflowRunKind()], authorize: allowAll, clock: d.clock.clock, watch: false });
    // Recovery of `d` waits at its first look at the ref until released.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const resolveRef = store.resolveRef.bind(store);
    let first = true;
    (store as { resolveRef: RepoStore["resolveRef"] }).resolveRef = async (...args) => {
      if (first) {
        first = false;
        entered();
        await held;
      }
      return resolveRef(...args);
    };
    const scheduler: WorkflowHostScheduler = createWorkflowHostScheduler({ store, principal: null, clock: d.clock.clock, timers: d.clock.timers, listActiveDeployments: () => ["d"] });
    const starting = scheduler.start();
    try {
      await inside;
      expect(await scheduler.servedPendingTimers("d")).toBeNull();
      expect(await listServedPendingTimers(scheduler, "d", { clock: () => NOW })).toBeNull();
      // The fold answers meanwhile.
      const folded = await listPendingTimers(store, { repoId: "d", clock: () => NOW });
      expect(folded.timers.map((t) => t.timerId)).toEqual(["wait:approval:1"]);
      release();
      await starting;
      const served = await listServedPendingTimers(scheduler, "d", { clock: () => NOW });
      expect(served).not.toBeNull();
      const strip = (r: typeof folded): unknown => ({ ...r, badEvents: [], unreadableRuns: r.unreadableRuns.map((u) => ({ runId: u.runId, path: u.path, code: u.error.code })) });
      expect(strip(served as typeof folded)).toEqual(strip(folded));
      expect(served?.commits).toEqual([{ repoId: "d", commitSha: await d.w.tip() }]);
    } finally {
      release();
      await starting.catch(() => undefined);
      await scheduler.stop();
      await store.close();
    }
  });
});
