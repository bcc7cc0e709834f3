/**
 * The options a library user passes. The `dataDir`: An empty string took the host lock in the current folder
 * while the store wrote deployments under `/`; a missing one was a bare TypeError; a data dir
 * that is a file, or lies below one, was node's raw EEXIST / ENOTDIR from `start()`. Each is now
 * a typed error: `config_invalid` when the host (or store) is created, `data_dir_not_found` from
 * `start()`, and nothing is written.
 */
import { describe, expect, it } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { createWorkflowHost } from "../../../src/host/host.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { allowAll } from "../../../src/substrate/index.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { workflowRunKind } from "../../../src/workflow/workflow-run-kind.js";
import { createMemFs } from "../../helpers/memfs.js";
import { expectCode } from "../../helpers/expect-code.js";

async function rejectionCode(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    return isWorkflowHostError(error) ? error.code : `untyped ${String(error)}`;
  }
  return "resolved";
}

describe("the dataDir option", () => {
  it.each([[""], [undefined], [42], [null], ["data\u0000dir"]])("refuses %j when the host is created (config_invalid)", (dataDir) => {
    const fs = createMemFs();
    expectCode(() => createWorkflowHost({ dataDir: dataDir as string, fs, watch: false }), "config_invalid");
    expect(fs.readdirSync("/")).toEqual([]);
  });

  it("refuses an empty dataDir for a store as well (config_invalid), rather than writing under /", () => {
    expectCode(() => createRepoStore({ dataDir: "", fs: createMemFs(), kindHandlers: [workflowRunKind()], authorize: allowAll, watch: false }), "config_invalid");
  });

  it("start() of a host whose data dir is a file, or lies below one, is data_dir_not_found", async () => {
    const fs = createMemFs();
    fs.mkdirSync("/srv", { recursive: true });
    fs.writeFileSync("/srv/file", "not a folder");
    const clock = createFakeClock("2026-05-01T10:00:00Z");
    for (const dataDir of ["/srv/file", "/srv/file/data"]) {
      const host = createWorkflowHost({ dataDir, fs, clock: clock.clock, timers: clock.timers, watch: false });
      expect({ dataDir, code: await rejectionCode(host.start()) }).toEqual({ dataDir, code: "data_dir_not_found" });
      expect(host.state).toBe("stopped");
    }
    expect(fs.readdirSync("/srv")).toEqual(["file"]);
  });

  it("start() on a data dir where nothing can be written is io_failed naming the errno, not node's raw error", async () => {
    const fs = createMemFs();
    fs.mkdirSync("/data", { recursive: true });
    const promises = fs.promises as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const original = promises["mkdir"]?.bind(fs.promises) as (...args: unknown[]) => Promise<unknown>;
    // The data dir exists; making anything inside it fails as on a read-only mount.
    promises["mkdir"] = async (...args: unknown[]) => (args[0] === "/data" ? original(...args) : Promise.reject(Object.assign(new Error("EROFS: injected"), { code: "EROFS" })));
    const clock = createFakeClock("2026-05-01T10:00:00Z");
    const host = createWorkflowHost({ dataDir: "/data", fs, clock: clock.clock, timers: clock.timers, watch: false });
    let thrown: unknown;
    await host.start().catch((error: unknown) => (thrown = error));
    expect(isWorkflowHostError(thrown) ? [thrown.code, thrown.data["errno"]] : String(thrown)).toEqual(["io_failed", "EROFS"]);
    expect(host.state).toBe("stopped");
  });
});

describe("other options of createWorkflowHost", () => {
  // Each was taken without a word: "fsynch" wrote without fsync, "bogus" became the misfire
  // policy of every series that names none, and a negative maxEventBytes refused every write.
  it.each([
    [{ durability: "fsynch" }],
    [{ durability: true }],
    [{ misfire: "bogus" }],
    [{ maxEventBytes: -1 }],
    [{ maxEventBytes: 0 }],
    [{ maxEventBytes: "1048576" }],
    [{ maxEventBytes: 1.5 }],
  ])("refuses %j (config_invalid) when the host is created", (extra) => {
    expectCode(() => createWorkflowHost({ dataDir: "/data", fs: createMemFs(), watch: false, ...(extra as object) }), "config_invalid");
  });

  it("refuses a durability other than fsync or none for a store as well", () => {
    expectCode(() => createRepoStore({ dataDir: "/data", fs: createMemFs(), kindHandlers: [workflowRunKind()], authorize: allowAll, watch: false, durability: "always" as "fsync" }), "config_invalid");
  });

  it("takes the documented values", () => {
    for (const extra of [{ durability: "fsync" }, { durability: "none" }, { misfire: "latest" }, { misfire: "all" }, { maxEventBytes: 4_096 }] as const) {
      expect(() => createWorkflowHost({ dataDir: "/data", fs: createMemFs(), watch: false, ...extra })).not.toThrow();
    }
  });
});
