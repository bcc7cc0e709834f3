/** The bound on heavy reads served at once: order of turns, the queue's bound, bad bounds. */
import { describe, expect, it } from "vitest";
import { createHeavyReadGate } from "../../../src/http/heavy-read-gate.js";

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe("createHeavyReadGate", () => {
  it("runs at most `concurrency` at once, the others in arrival order, and refuses one more than `queue` with busy (503 Retry-After)", async () => {
    const gate = createHeavyReadGate(1, 2);
    const started: string[] = [];
    const first = deferred();
    const a = gate.run(async () => {
      started.push("a");
      await first.promise;
      return "a";
    });
    const b = gate.run(async () => (started.push("b"), "b"));
    const c = gate.run(async () => (started.push("c"), "c"));
    expect(gate.load()).toEqual({ running: 1, waiting: 2 });
    await expect(gate.run(async () => "d")).rejects.toMatchObject({ name: "HttpError", code: "busy", headers: { "retry-after": "1" } });
    expect(started).toEqual(["a"]);
    first.resolve();
    expect(await Promise.all([a, b, c])).toEqual(["a", "b", "c"]);
    expect(started).toEqual(["a", "b", "c"]);
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("hands the turn on when a read fails", async () => {
    const gate = createHeavyReadGate(1, 1);
    const failing = gate.run(async () => {
      throw new Error("read failed");
    });
    const next = gate.run(async () => "next");
    await expect(failing).rejects.toThrow("read failed");
    expect(await next).toBe("next");
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("drops a waiting read whose client went away: its work never runs, its place in the queue is freed, and the turn goes to the next", async () => {
    const gate = createHeavyReadGate(1, 2);
    const started: string[] = [];
    const first = deferred();
    const a = gate.run(async () => {
      started.push("a");
      await first.promise;
    });
    const gone = new AbortController();
    const b = gate.run(async () => {
      started.push("b");
    }, gone.signal);
    const c = gate.run(async () => {
      started.push("c");
    });
    expect(gate.load()).toEqual({ running: 1, waiting: 2 });
    gone.abort();
    await expect(b).rejects.toMatchObject({ name: "HttpError", code: "busy" });
    expect(gate.load()).toEqual({ running: 1, waiting: 1 });
    first.resolve();
    await Promise.all([a, c]);
    expect(started).toEqual(["a", "c"]);
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
    // A client gone before its read was asked for takes no turn at all.
    const before = new AbortController();
    before.abort();
    await expect(gate.run(async () => started.push("d"), before.signal)).rejects.toMatchObject({ code: "busy" });
    expect(started).toEqual(["a", "c"]);
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("refuses bounds that are not whole numbers in range (config_invalid)", () => {
    expect(() => createHeavyReadGate(0, 1)).toThrow(expect.objectContaining({ code: "config_invalid" }) as Error);
    expect(() => createHeavyReadGate(1, -1)).toThrow(expect.objectContaining({ code: "config_invalid" }) as Error);
    expect(() => createHeavyReadGate(1.5, 1)).toThrow(expect.objectContaining({ code: "config_invalid" }) as Error);
  });
});
