/**
 * `CommittedReads.stored` and `packedAll`: whether objects are in the repository without
 * reading them (design notes §74). Packed objects answer at once from the pack index; loose ones
 * after a look for their file; an absent one is not there; 40 dashes (none) are never there.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { WORKFLOW_RUN_DIRECTORY_PREFIX, WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-stored-");
const rid = { kind: WORKFLOW_RUN_KIND, id: "d" };
const stores: RepoStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function open(dataDir: string, packThreshold?: number): RepoStore {
  const store = createRepoStore({ dataDir, kindHandlers: [{ kind: WORKFLOW_RUN_KIND, directoryPrefix: WORKFLOW_RUN_DIRECTORY_PREFIX }], authorize: allowAll, watch: false, ...(packThreshold === undefined ? {} : { packThreshold }) });
  stores.push(store);
  return store;
}

describe("stored and packedAll", () => {
  it("answer for packed objects at once, for loose ones after a look, and say an absent object is not there", async () => {
    const dataDir = await tempDir();
    const writer = open(dataDir);
    await writer.initRepo(null, rid);
    // One commit of several files: one pack.
    await writer.writeTree(null, rid, "refs/heads/main", { files: new Map([["runs/a/events/1.json", "one"], ["runs/a/events/2.json", "two"], ["runs/b/events/1.json", "three"]]), message: "packed" });
    await writer.close();
    // One more file, written loose.
    const loose = open(dataDir, Number.POSITIVE_INFINITY);
    await loose.writeTree(null, rid, "refs/heads/main", { files: new Map([["runs/c/events/1.json", "four"]]), message: "loose" });
    await loose.close();
    const store = open(dataDir);
    const reads = await store.openCommittedReads(null, rid, "refs/heads/main");
    const packed = (await reads.treeOid("runs/a/events/2.json")) as string;
    const packedTree = (await reads.treeOid("runs/a/events")) as string;
    const looseBlob = (await reads.treeOid("runs/c/events/1.json")) as string;
    const absent = "0123456789abcdef0123456789abcdef01234567";
    expect(reads.stored?.(packed)).toBe(true);
    expect(reads.stored?.(packedTree)).toBe(true);
    expect(await reads.stored?.(looseBlob)).toBe(true);
    expect(await reads.stored?.(absent)).toBe(false);
    expect(await reads.stored?.("not an oid")).toBe(false);
    expect([...(reads.packedAll?.(`${packed}${"-".repeat(40)}${looseBlob}${absent}${packedTree}`) ?? [])]).toEqual([1, 0, 0, 0, 1]);
    // The loose file removed: not there any more.
    const gitdir = join(dataDir, WORKFLOW_RUN_DIRECTORY_PREFIX, "d.git");
    await rm(join(gitdir, "objects", looseBlob.slice(0, 2), looseBlob.slice(2)));
    expect(await reads.stored?.(looseBlob)).toBe(false);
  });
});
