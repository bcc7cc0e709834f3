/**
 * `main` moved back to one of its own ancestors behind a running host (a `git update-ref` to an
 * older commit, a force push of a stale clone) would hand the host its own fires again as due
 * timers. The host refuses the rewind: it reports it (`ref_rewritten`, then `rewind_refused`
 * naming both commits), keeps the runs as it last saw them, and fires nothing twice; restoring
 * `main` to the reported commit resumes as if nothing happened.
 */
import { afterEach, describe, expect, it } from "vitest";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { createHarness, firedOf, until, type Harness } from "./harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const RID = { kind: WORKFLOW_RUN_KIND, id: "dep" };
const MAIN_FILE = "/data/deployments/dep.git/refs/heads/main";

/** Advances the clock 500 ms at a time (at most 200 times) until `runId`'s log holds a TimerFired. */
async function untilFired(harness: Harness, runId: string, what: string): Promise<void> {
  await until(async () => {
    await harness.clock.advance(500);
    await harness.scheduler.idle();
    return firedOf(await harness.log(runId)).length > 0;
  }, what, 200);
}

describe("main rewound behind a running host", () => {
  it("is reported and refused: nothing fires again, and restoring main resumes", async () => {
    h = await createHarness("2026-05-01T10:00:00.000Z");
    await h.append("r1", { type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T10:00:01.000Z" } });
    await h.append("r2", { type: "TimerSet", data: { timerId: "b", fireAt: "2026-05-01T10:00:02.000Z" } });
    const before = (await h.store.resolveRef(null, RID, "main")) as string;
    await h.scheduler.start();
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    const fired = (await h.store.resolveRef(null, RID, "main")) as string;
    expect(firedOf(await h.log("r1"))).toHaveLength(1);

    await h.writeFile(MAIN_FILE, `${before}\n`);
    h.store.poke();
    await until(() => h?.events.some((e) => e.type === "rewind_refused") === true, "the rewind refused");
    await h.clock.advance(2_000);
    await h.scheduler.idle();
    expect(h.events.filter((e) => e.type === "fired")).toHaveLength(1);
    expect(h.events.filter((e) => e.type === "rewind_refused")).toEqual([{ type: "rewind_refused", repoId: "dep", from: fired, to: before }]);
    expect(firedOf(await h.log("r1"))).toHaveLength(0);
    // b came due meanwhile: not committed on the rewound main, retried (never dropped).
    expect(firedOf(await h.log("r2"))).toHaveLength(0);
    const refused = h.events.filter((e) => e.type === "commit_failed").map((e) => (e as { error: { code?: string } }).error.code);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set(["ref_rewound"]));

    // Restored by the operator: the host goes on; b fires once, a never again.
    await h.writeFile(MAIN_FILE, `${fired}\n`);
    h.store.poke();
    await untilFired(h, "r2", "b fired after the restore");
    expect(firedOf(await h.log("r1"))).toHaveLength(1);
    expect(firedOf(await h.log("r2"))).toHaveLength(1);
    expect(h.events.filter((e) => e.type === "fired").map((e) => (e as { timerId: string }).timerId)).toEqual(["a", "b"]);
  });

  it("ends the refusal on a rewrite that is no rewind: the deployment is read afresh from the new tip", async () => {
    h = await createHarness("2026-05-01T10:00:00.000Z");
    const genesis = (await h.store.resolveRef(null, RID, "main")) as string;
    await h.append("r1", { type: "TimerSet", data: { timerId: "a", fireAt: "2026-05-01T10:00:01.000Z" } });
    const before = (await h.store.resolveRef(null, RID, "main")) as string;
    await h.scheduler.start();
    await h.clock.advance(1_000);
    await h.scheduler.idle();
    await h.writeFile(MAIN_FILE, `${before}\n`);
    h.store.poke();
    await until(() => h?.events.some((e) => e.type === "rewind_refused") === true, "the rewind refused");
    // Someone replaces main by a history of its own (from genesis, without the commit the host held).
    await h.writeFile(MAIN_FILE, `${genesis}\n`);
    await h.rawDelta({ "runs/r9/events/1.json": JSON.stringify({ seq: 1, type: "TimerSet", data: { timerId: "z", fireAt: "2026-05-01T10:00:03.000Z" } }) });
    await untilFired(h, "r9", "z fired from the new history");
    expect(firedOf(await h.log("r9"))).toHaveLength(1);
  });
});
