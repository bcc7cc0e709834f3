import { describe, expect, it } from "vitest";
import { createBlockingFsAdapter, createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { createPackStore, STALE_SPARE_MS, STALE_TEMP_MS } from "../../../src/substrate/pack-store.js";
import { QUICK_COMMIT_PACK_BYTES } from "../../../src/substrate/pack-writer.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { createMemStore, DATA_DIR, GITDIR, looseObjects, REPO } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";
import { seededBytes } from "../../helpers/seeded-random.js";
import { outOfTurns } from "../../helpers/wait-turns.js";

function packFiles(fs: MemFs): string[] {
  return (fs.readdirSync(`${GITDIR}/objects/pack`) as string[]).filter((name) => name.endsWith(".pack")).sort();
}

/** Seeds a `runs/` folder big enough to be stored as deltas once packs are merged. */
async function seed(store: RepoStore, runs: number): Promise<void> {
  const files: Record<string, string> = {};
  for (let i = 0; i < runs; i++) files[`runs/r${String(i).padStart(5, "0")}/events/1.json`] = `{"seq":1,"i":${i}}`;
  await store.writeTree(null, REPO, "main", { files, message: "seed" });
}

/** Names in objects/ that are writes in progress (git's tmp_ prefix). */
function tempFiles(fs: MemFs): string[] {
  return (fs.readdirSync(`${GITDIR}/objects`) as string[]).filter((name) => name.startsWith("tmp_"));
}

describe("pack files", () => {
  it("a write that loses its compare-and-swap leaves neither its pack nor its temp files", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    const { store: other } = createMemStore({ fs, packThreshold: 1 });
    await store.initRepo(null, REPO);
    await seed(store, 50);
    const before = packFiles(fs).length;
    let attempts = 0;
    const result = await store.writeTreePreservingPrefix(null, REPO, "main", {
      preservePrefix: "runs/r00001/events/",
      message: "mine",
      merge: async (existing) => {
        attempts++;
        // Another writer moves the ref after our plan and before our compare-and-swap.
        if (attempts === 1) await other.writeTree(null, REPO, "main", { files: { "runs/r00002/events/2.json": '{"seq":2}' }, message: "other" });
        return { files: new Map<string, Uint8Array | string>([...existing, ["2.json", `{"seq":2,"try":${attempts}}`]]) };
      },
    });
    expect(result).toMatchObject({ committed: true, attempts: 2 });
    await Promise.all([store.close(), other.close()]);
    // The other writer's pack and our winning one; the losing attempt's pack never appeared.
    expect(packFiles(fs).length).toBe(before + 2);
    expect(tempFiles(fs)).toEqual([]);
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(Buffer.from((await reads.readBlob("runs/r00001/events/2.json")) as Uint8Array).toString()).toBe('{"seq":2,"try":2}');
    await fresh.close();
  });

  it("writes a commit of packThreshold objects or more as one pack and a smaller one as loose objects", async () => {
    const { store, fs } = createMemStore({ packThreshold: 3 });
    await store.initRepo(null, REPO);
    const loose = looseObjects(fs).length;
    await seed(store, 300);
    expect(packFiles(fs)).toHaveLength(1);
    expect(looseObjects(fs)).toHaveLength(loose);
    // A file at the root: its blob, the new root tree and the commit make a three-object pack;
    // a commit of two objects (an empty message change is impossible, so: a blob put over an
    // equal one is no commit at all) stays loose.
    await store.writeTree(null, REPO, "main", { files: { "README.md": "# dep\n" }, message: "small" });
    expect(packFiles(fs)).toHaveLength(2);
    expect(looseObjects(fs)).toHaveLength(loose);
    await store.close();

    const { store: fresh } = createMemStore({ fs, packThreshold: 3 });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(300);
    expect(Buffer.from((await reads.readBlob("runs/r00123/events/1.json")) as Uint8Array).toString()).toBe('{"seq":1,"i":123}');
    expect(Buffer.from((await reads.readBlob("README.md")) as Uint8Array).toString()).toBe("# dep\n");
    await fresh.close();
  });

  it("merges packs beyond sixteen, keeps every commit readable, and stores big folders as deltas", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    await seed(store, 1_000);
    const tips: string[] = [];
    for (let k = 0; k < 40; k++) {
      const run = `r${String((k * 37) % 1_000).padStart(5, "0")}`;
      const result = await store.writeTree(null, REPO, "main", { files: { [`runs/${run}/events/${k + 2}.json`]: `{"k":${k}}` }, message: `k ${k}` });
      tips.push(result.commitSha as string);
    }
    await store.close();
    const packs = packFiles(fs);
    expect(packs.length).toBeLessThanOrEqual(17);
    const bytes = packs.reduce((n, name) => n + (fs.statSync(`${GITDIR}/objects/pack/${name}`).size as number), 0);
    // 41 versions of a ~40 KB folder: whole copies would be ~1.6 MB.
    expect(bytes).toBeLessThan(800_000);

    const { store: fresh } = createMemStore({ fs });
    for (let k = 0; k < 40; k++) {
      const reads = await fresh.openCommittedReads(null, REPO, tips[k] as string);
      const run = `r${String((k * 37) % 1_000).padStart(5, "0")}`;
      expect(await reads.listDir("runs")).toHaveLength(1_000);
      expect(Buffer.from((await reads.readBlob(`runs/${run}/events/${k + 2}.json`)) as Uint8Array).toString()).toBe(`{"k":${k}}`);
    }
    await fresh.close();
  });

  it("merges per-commit packs without reading the big folders it stores as the edits' own deltas", async () => {
    const memfs = createMemFs();
    let packBytesRead = 0;
    // Counts what is read out of pack files by range (how merges read their sources).
    const counting = {
      ...memfs,
      promises: {
        ...memfs.promises,
        async open(path: string, flags: string, mode?: number) {
          const handle = await memfs.promises.open(path, flags, mode);
          if (!String(path).endsWith(".pack")) return handle;
          return {
            read: async (buffer: Uint8Array, offset: number, length: number, position: number) => {
              const result = await handle.read(buffer, offset, length, position);
              packBytesRead += result.bytesRead;
              return result;
            },
            write: handle.write.bind(handle),
            sync: () => handle.datasync(),
            stat: handle.stat.bind(handle),
            close: handle.close.bind(handle),
          };
        },
      },
    };
    const { store } = createMemStore({ fs: counting as unknown as MemFs, packThreshold: 1 });
    await store.initRepo(null, REPO);
    await seed(store, 1_000);
    for (let k = 0; k < 40; k++) {
      const run = `r${String((k * 37) % 1_000).padStart(5, "0")}`;
      await store.writeTree(null, REPO, "main", { files: { [`runs/${run}/events/${k + 2}.json`]: `{"k":${k}}` }, message: `k ${k}` });
    }
    await store.close();
    // Forty ~40 KB versions of runs/ were merged (each pack is mostly one); read whole, that is
    // over 1.5 MB. Only the first version of each merge (its base is in no source) is read.
    const folderBytes = 1_000 * 37;
    expect(packFiles(memfs).length).toBeLessThanOrEqual(17);
    expect(packBytesRead).toBeGreaterThan(0);
    expect(packBytesRead).toBeLessThan(8 * folderBytes);
    const { store: fresh } = createMemStore({ fs: memfs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(1_000);
    await fresh.close();
  });

  it("removes temp files a killed writer left in objects/ once they are old, and keeps fresh ones", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    await seed(store, 10);
    await store.close();
    const dir = `${GITDIR}/objects`;
    const old = (Date.now() - STALE_TEMP_MS - 60_000) / 1000;
    for (const name of ["tmp_pack_dead0", "tmp_idx_dead1", "tmp_obj_dead2"]) {
      fs.writeFileSync(`${dir}/${name}`, "partial");
      fs.utimesSync(`${dir}/${name}`, old, old);
    }
    fs.writeFileSync(`${dir}/tmp_pack_live3`, "being written");
    const { store: next } = createMemStore({ fs, packThreshold: 1 });
    await next.writeTree(null, REPO, "main", { files: { "runs/r00001/events/2.json": '{"seq":2}' }, message: "after a crash" });
    await next.close();
    expect(tempFiles(fs)).toEqual(["tmp_pack_live3"]);
  });

  it("sweeps again once a killed writer's spare pair, young at the first sweep (a host restarted at once), has turned stale", async () => {
    const mem = createMemFs();
    const gitdir = GITDIR;
    const dir = `${gitdir}/objects`;
    mem.mkdirSync(`${dir}/pack`, { recursive: true });
    const startMs = Date.now();
    let nowMs = startMs;
    const store = createPackStore({ fs: createFsAdapter(mem), quickFs: createBlockingFsAdapter(mem), gitdir, repoKey: gitdir, packBytes: new ScopedLruCache(1 << 20), durable: false, clock: () => new Date(nowMs) });
    // The spare pair of a host killed 10 s ago: empty, too young for the first sweep.
    const dead = ["tmp_pack_dead0", "tmp_idx_dead1"];
    for (const name of dead) {
      mem.writeFileSync(`${dir}/${name}`, "");
      mem.utimesSync(`${dir}/${name}`, (startMs - 10_000) / 1000, (startMs - 10_000) / 1000);
    }
    await store.write([hashObject("blob", Buffer.from("first"))]);
    await store.idle();
    expect(tempFiles(mem).filter((name) => dead.includes(name)).sort()).toEqual([...dead].sort());
    // Five minutes on: the dead pair is stale (empty, older than STALE_SPARE_MS); this writer's
    // own files, made after startMs, are not.
    nowMs = startMs + STALE_SPARE_MS;
    await store.write([hashObject("blob", Buffer.from("second"))]);
    await store.idle();
    expect(tempFiles(mem).filter((name) => dead.includes(name))).toEqual([]);
    await store.close();
    expect(tempFiles(mem)).toEqual([]);
  });

  it("removes a reverse index left without its pack (a reader's write racing a merge, a user's rm) once old, and a killed reader's temp file", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    await seed(store, 10);
    await store.close();
    const packDir = `${GITDIR}/objects/pack`;
    const old = (Date.now() - STALE_TEMP_MS - 60_000) / 1000;
    const orphan = `pack-${"1".repeat(40)}.rev`;
    const fresh = `pack-${"2".repeat(40)}.rev`;
    const [live] = packFiles(fs);
    const beside = (live as string).replace(/\.pack$/, ".rev");
    for (const name of [orphan, fresh, beside]) fs.writeFileSync(`${packDir}/${name}`, "RIDX");
    for (const name of [orphan, beside]) fs.utimesSync(`${packDir}/${name}`, old, old);
    fs.writeFileSync(`${GITDIR}/objects/tmp_rev_dead4`, "RID");
    fs.utimesSync(`${GITDIR}/objects/tmp_rev_dead4`, old, old);
    const { store: next } = createMemStore({ fs, packThreshold: 1 });
    await next.writeTree(null, REPO, "main", { files: { "runs/r00001/events/2.json": '{"seq":2}' }, message: "after a crash" });
    await next.close();
    const revs = (fs.readdirSync(packDir) as string[]).filter((name) => name.endsWith(".rev")).sort();
    expect(revs).toEqual([beside, fresh].sort());
    expect(tempFiles(fs)).toEqual([]);
  });

  it("a merge still removes the packs it replaced when a folder sits at one's .rev name", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    for (let k = 0; k < 3; k++) await store.writeTree(null, REPO, "main", { files: { [`runs/r${k}/events/1.json`]: `{"seq":${k}}` }, message: `k ${k}` });
    const packDir = `${GITDIR}/objects/pack`;
    const before = packFiles(fs);
    expect(before.length).toBeGreaterThanOrEqual(2);
    // Not a file: nothing can unlink it, and it holds no reverse index anyway.
    fs.mkdirSync(`${packDir}/${(before[0] as string).replace(/\.pack$/, ".rev")}/inner`, { recursive: true });
    await store.compactPacks?.(null, REPO);
    await store.close();
    const after = packFiles(fs);
    expect(after).toHaveLength(1);
    expect(before).not.toContain(after[0]);
    const idx = (fs.readdirSync(packDir) as string[]).filter((name) => name.endsWith(".idx"));
    expect(idx).toEqual([(after[0] as string).replace(/\.pack$/, ".idx")]);
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(3);
    await fresh.close();
  });

  it("writes a small commit's pack into temp files made ahead of it, and removes the spare pair at close", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    const commit = (k: number) => store.writeTree(null, REPO, "main", { files: { [`runs/r1/events/${k}.json`]: `{"seq":${k}}` }, message: `k ${k}` });
    /** The spare pair, once the store has made it in the background. */
    const spare = async (): Promise<string[]> => {
      const since = performance.now();
      for (let turn = 0; !outOfTurns(turn, 1_000, since) && tempFiles(fs).length < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      return tempFiles(fs).sort();
    };
    await commit(1);
    const first = await spare();
    expect(first).toHaveLength(2);
    expect(first.map((name) => fs.statSync(`${GITDIR}/objects/${name}`).size)).toEqual([0, 0]);
    await commit(2);
    // The spare pair became the commit's pack: the names are gone from objects/, a new pair is made.
    const second = await spare();
    expect(second).toHaveLength(2);
    expect(second.filter((name) => first.includes(name))).toEqual([]);
    // A spare that vanished (removed by hand, or swept by another store) is created again.
    for (const name of second) fs.unlinkSync(`${GITDIR}/objects/${name}`);
    expect(await commit(3)).toMatchObject({ committed: true });
    await store.close();
    expect(tempFiles(fs)).toEqual([]);
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs/r1/events")).map((entry) => entry.name).sort()).toEqual(["1.json", "2.json", "3.json"]);
    expect(Buffer.from((await reads.readBlob("runs/r1/events/3.json")) as Uint8Array).toString()).toBe('{"seq":3}');
    await fresh.close();
  });

  it("writes a commit's pack up to QUICK_COMMIT_PACK_BYTES into the spare pair with blocking calls, a bigger one through the thread pool", async () => {
    const fs = createMemFs();
    // The thread-pool adapter's calls that write a pack's or index's bytes into a temp file (a
    // spare pair is made empty through the pool too: not counted).
    const poolWrites: string[] = [];
    const promises = fs.promises as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const open = promises.open as (...args: unknown[]) => Promise<unknown>;
    const writeFile = promises.writeFile as (...args: unknown[]) => Promise<unknown>;
    promises.open = (path, ...rest) => {
      if (String(path).includes("/objects/tmp_")) poolWrites.push(String(path));
      return open.call(fs.promises, path, ...rest);
    };
    promises.writeFile = (path, data, ...rest) => {
      if (String(path).includes("/objects/tmp_") && (data as Uint8Array).byteLength > 0) poolWrites.push(String(path));
      return writeFile.call(fs.promises, path, data, ...rest);
    };
    const { store } = createMemStore({ fs, packThreshold: 1 });
    await store.initRepo(null, REPO);
    const noise = seededBytes;
    const spare = async (): Promise<string[]> => {
      const since = performance.now();
      for (let turn = 0; !outOfTurns(turn, 1_000, since) && tempFiles(fs).length < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
      return tempFiles(fs).sort();
    };
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "small" });
    const first = await spare();
    expect(first).toHaveLength(2);
    poolWrites.length = 0;
    // ~300 KB: past QUICK_PACK_BYTES, within QUICK_COMMIT_PACK_BYTES (a fire commit's pack at 10,000 runs).
    const middle = noise(300 * 1024, 7);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/blobs/middle": middle }, message: "middle" });
    expect(poolWrites).toEqual([]);
    const second = await spare();
    expect(second.filter((name) => first.includes(name))).toEqual([]);
    // Past QUICK_COMMIT_PACK_BYTES: both files through the pool, the spare pair left for the next.
    const big = noise(QUICK_COMMIT_PACK_BYTES + 64 * 1024, 11);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/blobs/big": big }, message: "big" });
    expect(poolWrites.map((path) => path.replace(/.*\/objects\/tmp_(pack|idx)_.*/, "$1")).sort()).toEqual(["idx", "pack"]);
    expect(tempFiles(fs).sort()).toEqual(second);
    await store.close();
    expect(tempFiles(fs)).toEqual([]);
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(Buffer.compare(Buffer.from((await reads.readBlob("runs/r1/blobs/middle")) as Uint8Array), Buffer.from(middle))).toBe(0);
    expect(Buffer.compare(Buffer.from((await reads.readBlob("runs/r1/blobs/big")) as Uint8Array), Buffer.from(big))).toBe(0);
    await fresh.close();
  });

  it("keeps reading every new tip while another store merges and deletes the packs it had loaded", async () => {
    const { store: writer, fs } = createMemStore({ packThreshold: 1 });
    const { store: reader } = createMemStore({ fs, packThreshold: 1 });
    await writer.initRepo(null, REPO);
    await seed(writer, 200);
    for (let k = 0; k < 60; k++) {
      await writer.writeTree(null, REPO, "main", { files: { [`runs/r${String(k % 200).padStart(5, "0")}/events/${k + 2}.json`]: `{"k":${k}}` }, message: `k ${k}` });
      // Merges run in the background of the writer; the reader's view of the pack folder goes
      // stale under it at any moment.
      const reads = await reader.openCommittedReads(null, REPO, "main");
      expect(Buffer.from((await reads.readBlob(`runs/r${String(k % 200).padStart(5, "0")}/events/${k + 2}.json`)) as Uint8Array).toString()).toBe(`{"k":${k}}`);
    }
    await Promise.all([writer.close(), reader.close()]);
    expect(packFiles(fs).length).toBeLessThanOrEqual(17);
  });

  it("finds a pack written by another store after it was first scanned", async () => {
    const { store: a, fs } = createMemStore({ packThreshold: 3 });
    const { store: b } = createMemStore({ fs, packThreshold: 3 });
    await a.initRepo(null, REPO);
    await seed(a, 50);
    expect(await (await b.openCommittedReads(null, REPO, "main")).listDir("runs")).toHaveLength(50);
    const files: Record<string, string> = {};
    for (let i = 0; i < 20; i++) files[`runs/new${i}/events/1.json`] = `${i}`;
    await a.writeTree(null, REPO, "main", { files, message: "more" });
    expect(await (await b.openCommittedReads(null, REPO, "main")).listDir("runs")).toHaveLength(70);
    await Promise.all([a.close(), b.close()]);
    expect(DATA_DIR).toBe("/data");
  });
});
