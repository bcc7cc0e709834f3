/**
 * A commit's pack up to QUICK_COMMIT_PACK_BYTES is written with blocking calls into the spare
 * temp pair (pack-writer.ts). A write or flush that fails there (a full disk, an I/O error) must
 * reject the commit as io_failed and leave nothing half-published: the ref where it was, no new
 * pack or index in objects/pack, no temp file holding bytes; the next commit then lands and
 * every committed file reads back. A failure once the pack is in place (the ref lock's flush)
 * leaves that pack whole and unreferenced, as git does.
 */
import { describe, expect, it } from "vitest";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";
import { createFaultyMemFs } from "../../helpers/faulty-memfs.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";
import { seededBytes } from "../../helpers/seeded-random.js";

/** A memfs whose `nth` call (counted from arming) named `name` fails with `errno`. */
function faultyFs(): { fs: MemFs; failNth(name: string, nth: number, errno: string): void; failed(): number } {
  let armed: { name: string; left: number; errno: string } | null = null;
  let failed = 0;
  const fs = createFaultyMemFs((call) => {
    if (armed === null || call !== armed.name || --armed.left > 0) return null;
    const { errno } = armed;
    armed = null;
    failed += 1;
    return errno;
  });
  return {
    fs,
    failNth(name, nth, errno) {
      armed = { name, left: nth, errno };
    },
    failed: () => failed,
  };
}

const noise = seededBytes;
const tempFiles = (fs: MemFs): string[] => (fs.readdirSync(`${GITDIR}/objects`) as string[]).filter((name) => name.startsWith("tmp_")).sort();
const packFiles = (fs: MemFs): string[] => ((fs.readdirSync(`${GITDIR}/objects/pack`) as string[]) ?? []).sort();

async function spareMade(fs: MemFs): Promise<void> {
  for (let turn = 0; turn < 1_000 && tempFiles(fs).length < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
  expect(tempFiles(fs)).toHaveLength(2);
}

describe("a commit's pack written with blocking calls, when the disk fails", () => {
  it.each([
    ["the pack's write", "writeSync", 1, "ENOSPC"],
    ["the index's write", "writeSync", 2, "ENOSPC"],
    ["the pack's write", "writeSync", 1, "EIO"],
    ["the pack's flush", "fsync", 1, "EIO"],
    ["the ref lock's flush, after the pack is in place,", "fsync", 2, "ENOSPC"],
  ] as const)("%s failing (%s call %d, %s) rejects the commit and publishes nothing half-written", async (what, call, nth, errno) => {
    const published = what.startsWith("the ref lock");
    const faulty = faultyFs();
    const { store, fs } = createMemStore({ fs: faulty.fs, packThreshold: 1, durability: "fsync" });
    await store.initRepo(null, REPO);
    const first = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "small" });
    await spareMade(fs);
    const packsBefore = packFiles(fs);
    // ~300 KB: past QUICK_PACK_BYTES, within QUICK_COMMIT_PACK_BYTES: written into the spare pair.
    const middle = noise(300 * 1024, 7);
    faulty.failNth(call, nth, errno);
    const error = await store.writeTree(null, REPO, "main", { files: { "runs/r1/blobs/middle": middle }, message: "middle" }).catch((e: unknown) => e);
    expect(faulty.failed()).toBe(1);
    expect(error).toMatchObject({ code: "io_failed", data: { errno } });
    expect(await store.resolveRef(null, REPO, "main")).toBe(first.commitSha);
    expect(packFiles(fs)).toEqual(published ? expect.arrayContaining(packsBefore) : packsBefore);
    // Whatever is in objects/pack is whole: each pack with its index.
    const names = packFiles(fs);
    expect(names.filter((n) => n.endsWith(".pack")).map((n) => n.replace(/\.pack$/, ".idx"))).toEqual(names.filter((n) => n.endsWith(".idx")));
    // Only empty temp files (a spare pair made for the next commit) may stay.
    await new Promise((resolve) => setImmediate(resolve));
    for (const name of tempFiles(fs)) expect({ name, size: fs.statSync(`${GITDIR}/objects/${name}`).size }).toEqual({ name, size: 0 });

    const again = await store.writeTree(null, REPO, "main", { files: { "runs/r1/blobs/middle": middle }, message: "middle" });
    expect(again).toMatchObject({ committed: true, parentSha: first.commitSha });
    await store.close();
    expect(tempFiles(fs)).toEqual([]);
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(Buffer.compare(Buffer.from((await reads.readBlob("runs/r1/blobs/middle")) as Uint8Array), Buffer.from(middle))).toBe(0);
    expect(await reads.readBlob("runs/r1/events/1.json")).not.toBeNull();
    await fresh.close();
  });
});

describe("two stores committing to one repository, each writing its commit packs into its own spare pair", () => {
  it("lands every commit of both (losers retry), leaves no temp file with bytes, and a fresh store reads every file", async () => {
    const fs = createMemFs();
    const { store: a } = createMemStore({ fs, packThreshold: 1, durability: "fsync" });
    const { store: b } = createMemStore({ fs, packThreshold: 1, durability: "fsync" });
    await a.initRepo(null, REPO);
    const blobs = new Map<string, Uint8Array>();
    const commit = async (store: typeof a, name: string, seed: number): Promise<void> => {
      // ~200 KB each: past QUICK_PACK_BYTES, within QUICK_COMMIT_PACK_BYTES.
      const bytes = noise(200 * 1024, seed);
      blobs.set(`runs/r1/blobs/${name}`, bytes);
      const result = await store.writeTree(null, REPO, "main", { files: { [`runs/r1/blobs/${name}`]: bytes }, message: name });
      expect(result.committed).toBe(true);
    };
    for (let round = 0; round < 6; round++) await Promise.all([commit(a, `a${round}`, 100 + round), commit(b, `b${round}`, 200 + round)]);
    await a.close();
    await b.close();
    expect(tempFiles(fs)).toEqual([]);
    const names = packFiles(fs);
    expect(names.filter((n) => n.endsWith(".pack")).map((n) => n.replace(/\.pack$/, ".idx"))).toEqual(names.filter((n) => n.endsWith(".idx")));
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    for (const [path, bytes] of blobs) expect({ path, same: Buffer.compare(Buffer.from((await reads.readBlob(path)) as Uint8Array), Buffer.from(bytes)) }).toEqual({ path, same: 0 });
    await fresh.close();
  });
});
