/**
 * `createDispatcher`: runs the user's code when something happens in a deployment's log —
 * named consumers receive `TimerFired`, `TimerSkipped`, `SignalReceived` and the terminal run
 * events, at least once, across restarts and crashes.
 *
 * Why this shape:
 * - Progress is git-native: a ref per consumer in each deployment repo,
 *   `refs/consumers/<name>`, whose tree holds the cursor (a commit of main), the events handled
 *   ahead of it, failed-attempt counts and dead letters (`./consumer-state.ts`). It moves by the
 *   same compare-and-swap as main, so it is crash-safe, visible to `git log`, cloned and pushed
 *   with the deployment, and the CLI can release dead letters while a host runs.
 * - Reading is `subscribeKind` from the cursor: every commit after it exactly once, in order.
 *   The scheduler's fire commits are not slowed down: dispatch only reads main and writes its
 *   own ref. A fire commit of this process is not even read back: the committer hands its
 *   events over (`committed`, wired by the host to the scheduler's `onCommittedEvents`), and a
 *   lane that has read up to the commit's parent takes them as they are (`./consumer-lane.ts`).
 *   The log stays the only source of truth: whatever is not handed over in order is read.
 * - Runs are independent: each run's events are handed over in seq order (the next waits for
 *   the previous to be done or parked); different runs go in parallel, up to `concurrency`
 *   calls per consumer across all deployments.
 *
 * Delivery guarantee (at least once): every matching event committed after the consumer's
 * starting point is handed to the handler until one attempt succeeds or `maxAttempts` failed
 * (then it is parked, durably, and reported — never dropped). An event recorded as done (at or
 * before the cursor, or listed in `done`) is never handed over again. An event can be handed
 * over again only when its attempt was in flight, or had succeeded but its checkpoint was not
 * yet committed, when the process died (or when it is released from the dead letters with
 * `dispatch retry`). The idempotency key (`./dispatch-keys.ts`) lets the handler make those
 * repeats harmless.
 *
 * States: created → running (`start()`; lanes are made for every deployment and consumer,
 * deployments are re-listed every `discoverEveryMs`) → stopped. A lane whose read of main
 * fails is reported (`lane_failed`) and made anew at the next discovery, resuming from its
 * durable state.
 */
import { storeOf } from "../../src/substrate/store-option.js";
import { DEFAULT_REF } from "../../src/substrate/ref-name.js";
import { WorkflowHostError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { normalizeRefName } from "../../src/substrate/ref-name.js";
import { createSystemTimers, systemClock, type TimerHandle } from "../../src/time/clock.js";
import { DEFAULT_MAX_EVENT_BYTES } from "../../src/workflow/events.js";
import { createConsumerLane, type ConsumerLane } from "./consumer-lane.js";
import { describeError } from "./consumer-state.js";
import { checkConsumer, type CheckedConsumer } from "./dispatch-keys.js";
import type { ConsumerHandle, ConsumerOptions, Delivery, Dispatcher, DispatcherOptions, DispatchReport, LaneStatus } from "./dispatch-types.js";
import { httpDeliver } from "./http-target.js";
import { createSemaphore, type Semaphore } from "./semaphore.js";

interface Consumer {
  readonly checked: CheckedConsumer;
  readonly deliver: (delivery: Delivery, signal: AbortSignal) => Promise<unknown>;
  readonly slots: Semaphore;
  readonly lanes: Map<string, ConsumerLane>;
  stopped: boolean;
}

/**
 * Creates a dispatcher; nothing is read until `start()`.
 * Options: `repoStore`, `principal`, `listDeployments` (required); `ref` (`DEFAULT_REF` ("refs/heads/main")),
 * `clock`, `timers` (node's, unref'd), `random` (Math.random), `logger` (silent), `onEvent`,
 * `discoverEveryMs` (2 000), `maxEventBytes` (1 MiB), `maxBuffered` (10 000 per lane).
 * @throws config_invalid for a bad option
 */
export function createDispatcher(opts: DispatcherOptions): Dispatcher {
  const store = storeOf(opts, "createDispatcher");
  const clock = opts.clock ?? systemClock;
  const timers = opts.timers ?? createSystemTimers({ unref: true });
  const logger = opts.logger ?? silentLogger;
  const ref = opts.ref ?? DEFAULT_REF;
  const discoverEveryMs = opts.discoverEveryMs ?? 2_000;
  const maxBuffered = opts.maxBuffered ?? 10_000;
  if (!Number.isInteger(maxBuffered) || maxBuffered < 1) throw new WorkflowHostError("config_invalid", `maxBuffered ${String(maxBuffered)} must be an integer >= 1`, { field: "maxBuffered", value: maxBuffered });
  if (!Number.isInteger(discoverEveryMs) || discoverEveryMs < 10) throw new WorkflowHostError("config_invalid", `discoverEveryMs ${String(discoverEveryMs)} must be an integer >= 10`, { field: "discoverEveryMs", value: discoverEveryMs });
  const consumers = new Map<string, Consumer>();
  const fullName = (name: string): string | null => {
    try {
      return normalizeRefName(name);
    } catch {
      return null;
    }
  };
  const fullRef = fullName(ref);
  const sameRef = (other: string): boolean => fullRef !== null && fullName(other) === fullRef;
  let state: "created" | "running" | "stopped" = "created";
  let discoverTimer: TimerHandle | null = null;
  let refreshing: Promise<void> | null = null;

  const report = (r: DispatchReport): void => {
    try {
      opts.onEvent?.(r);
    } catch {
      // The listener's failure is not the dispatcher's.
    }
  };

  async function startLane(c: Consumer, repoId: string): Promise<void> {
    const lane = createConsumerLane({
      store,
      principal: opts.principal,
      repoId,
      ref,
      consumer: c.checked,
      deliver: c.deliver,
      slots: c.slots,
      clock,
      timers,
      random: opts.random ?? Math.random,
      logger,
      report,
      maxEventBytes: opts.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES,
      maxBuffered,
      onFailed: (error) => {
        if (c.lanes.get(repoId) === lane) c.lanes.delete(repoId);
        report({ type: "lane_failed", consumer: c.checked.name, repoId, error, retryInMs: discoverEveryMs });
      },
    });
    c.lanes.set(repoId, lane);
    try {
      await lane.start();
    } catch (error) {
      c.lanes.delete(repoId);
      await lane.stop();
      logger.error(`consumer ${c.checked.name} could not start in ${repoId}: ${describeError(error)}`, { consumer: c.checked.name, repoId });
      report({ type: "lane_failed", consumer: c.checked.name, repoId, error, retryInMs: discoverEveryMs });
    }
  }

  async function discover(): Promise<void> {
    if (state !== "running") return;
    let repoIds: readonly string[];
    try {
      repoIds = await opts.listDeployments();
    } catch (error) {
      logger.error(`listing deployments failed: ${describeError(error)}`);
      return;
    }
    const starts: Promise<void>[] = [];
    for (const c of consumers.values()) {
      if (c.stopped) continue;
      for (const repoId of repoIds) {
        if (c.lanes.has(repoId) || (c.checked.repoIds !== null && !c.checked.repoIds.has(repoId))) continue;
        starts.push(startLane(c, repoId));
      }
    }
    await Promise.all(starts);
  }

  function refresh(): Promise<void> {
    if (refreshing !== null) return refreshing.then(() => refresh());
    refreshing = discover().finally(() => {
      refreshing = null;
    });
    return refreshing;
  }

  function armDiscovery(): void {
    discoverTimer = timers.setTimeout(() => {
      discoverTimer = null;
      if (state !== "running") return;
      void refresh().finally(() => {
        if (state === "running") armDiscovery();
      });
    }, discoverEveryMs);
  }

  async function stopConsumer(c: Consumer): Promise<void> {
    c.stopped = true;
    const lanes = [...c.lanes.values()];
    c.lanes.clear();
    await Promise.all(lanes.map((lane) => lane.stop()));
  }

  const stoppedError = (what: string): WorkflowHostError => new WorkflowHostError("dispatcher_stopped", `${what}: the dispatcher is stopped`, {});

  return {
    add(options: ConsumerOptions): ConsumerHandle {
      if (state === "stopped") throw stoppedError("add");
      const checked = checkConsumer(options);
      if (consumers.has(checked.name)) throw new WorkflowHostError("consumer_exists", `a consumer named ${checked.name} is already registered`, { consumer: checked.name });
      const handler = options.handler;
      const deliver =
        handler !== undefined
          ? async (delivery: Delivery, signal: AbortSignal) => handler(delivery, signal)
          : httpDeliver(options.http as NonNullable<ConsumerOptions["http"]>);
      const c: Consumer = { checked, deliver, slots: createSemaphore(checked.concurrency), lanes: new Map(), stopped: false };
      consumers.set(checked.name, c);
      if (state === "running") void refresh();
      return {
        name: checked.name,
        status: () => [...c.lanes.values()].map((lane) => lane.status()),
        stop: async () => {
          consumers.delete(checked.name);
          await stopConsumer(c);
        },
      };
    },

    async start() {
      if (state !== "created") throw stoppedError("start");
      state = "running";
      await refresh();
      if (state === "running") armDiscovery();
    },

    refresh: () => (state === "running" ? refresh() : Promise.resolve()),

    committed(committed) {
      if (state !== "running" || !sameRef(committed.ref)) return;
      for (const c of consumers.values()) c.lanes.get(committed.repoId)?.handOver(committed);
    },

    status(): LaneStatus[] {
      return [...consumers.values()].flatMap((c) => [...c.lanes.values()].map((lane) => lane.status()));
    },

    async stop() {
      if (state === "stopped") return;
      state = "stopped";
      if (discoverTimer !== null) timers.clearTimeout(discoverTimer);
      discoverTimer = null;
      await refreshing?.catch(() => undefined);
      await Promise.all([...consumers.values()].map((c) => stopConsumer(c)));
    },
  };
}
