/**
 * Packs too big to read whole (over 8 MiB) are read through windows, each entry checked against
 * the CRC-32 its index records; and the reads of a walk (`CommittedReads.scan`) read the same
 * objects as ordinary reads, many blobs in one call.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createFsAdapter, type FsAdapter } from "../../../src/substrate/fs-adapter.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { parsePackIndex } from "../../../src/substrate/pack-file.js";
import { createPackReader } from "../../../src/substrate/pack-reader.js";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

/** Every file under `dir` with its bytes. */
function walkFiles(fs: MemFs, dir: string): [string, Uint8Array][] {
  const out: [string, Uint8Array][] = [];
  for (const name of fs.readdirSync(dir) as string[]) {
    const path = `${dir}/${name}`;
    if (fs.statSync(path).isDirectory()) out.push(...walkFiles(fs, path));
    else out.push([path, fs.readFileSync(path) as Uint8Array]);
  }
  return out;
}

const text = (bytes: Uint8Array | null): string | null => (bytes === null ? null : Buffer.from(bytes).toString("utf8"));

/** One commit of 2,000 small events and a 9 MiB blob of random bytes: one pack over 8 MiB. */
async function bigPack() {
  const { store, fs } = createMemStore({ packThreshold: 1 });
  await store.initRepo(null, REPO);
  const files: Record<string, string | Uint8Array> = { "blobs/big.bin": randomBytes(9 * 1024 * 1024) };
  for (let i = 0; i < 2_000; i++) files[`runs/r${String(i).padStart(4, "0")}/events/1.json`] = `{"seq":1,"type":"Noted","i":${i}}`;
  await store.writeTree(null, REPO, "main", { files, message: "big" });
  await store.close();
  const packs = (fs.readdirSync(`${GITDIR}/objects/pack`) as string[]).filter((n) => n.endsWith(".pack"));
  const name = packs.find((n) => (fs.statSync(`${GITDIR}/objects/pack/${n}`).size as number) > 8 * 1024 * 1024) as string;
  expect(name).toBeDefined();
  return { fs, big: files["blobs/big.bin"] as Uint8Array, pack: `${GITDIR}/objects/pack/${name}`, idx: `${GITDIR}/objects/pack/${name.replace(/\.pack$/, ".idx")}` };
}

describe("reading a pack too big to read whole", () => {
  it("reads every object of it, small ones through windows and a big one by itself", async () => {
    const { fs, big } = await bigPack();
    const { store } = createMemStore({ fs });
    const reads = await store.openCommittedReads(null, REPO, "main");
    for (const i of [0, 1, 777, 1_999]) expect(text(await reads.readBlob(`runs/r${String(i).padStart(4, "0")}/events/1.json`))).toBe(`{"seq":1,"type":"Noted","i":${i}}`);
    expect(Buffer.from((await reads.readBlob("blobs/big.bin")) as Uint8Array).equals(Buffer.from(big))).toBe(true);
    await store.close();
  });

  it("reads the same bytes through a walk's reads, many blobs in one call", async () => {
    const { fs } = await bigPack();
    const { store } = createMemStore({ fs });
    const reads = await store.openCommittedReads(null, REPO, "main");
    const scan = reads.scan?.() as NonNullable<ReturnType<NonNullable<typeof reads.scan>>>;
    expect(scan).toBeDefined();
    const oids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const [entry] = await scan.listDir(`runs/r${String(i * 40).padStart(4, "0")}/events`);
      oids.push((entry as { oid: string }).oid);
    }
    const blobs = await (scan.readBlobsByOid as (o: readonly string[]) => Promise<Uint8Array[]>)(oids);
    expect(blobs.map(text)).toEqual(oids.map((_, i) => `{"seq":1,"type":"Noted","i":${i * 40}}`));
    expect(await Promise.all(oids.map(async (oid) => text(await reads.readBlobByOid(oid))))).toEqual(blobs.map(text));
    await store.close();
  });

  it("reads a window once when many reads want it at the same time", async () => {
    const { fs, pack, idx } = await bigPack();
    const adapter = createFsAdapter(fs);
    const ranges: number[] = [];
    const counting: FsAdapter = {
      ...adapter,
      readRange(path, position, length) {
        if (path === pack) ranges.push(position);
        return adapter.readRange(path, position, length);
      },
    };
    const reader = createPackReader({ fs: counting, quickFs: counting, packDir: `${GITDIR}/objects/pack`, repoKey: "r", packBytes: new ScopedLruCache(64 << 20), packWindows: new ScopedLruCache(64 << 20) });
    const index = parsePackIndex("p", fs.readFileSync(idx) as Uint8Array, (fs.statSync(pack).size as number));
    // Fifty small objects of one window (the one the 2,000 events start in), asked for all at once by a fresh reader.
    const MIB = 1024 * 1024;
    const small = [...Array(index.count).keys()].filter((i) => index.endOf(index.offsetAt(i)) - index.offsetAt(i) < 1_000);
    const window = Math.floor(Math.min(...small.map((i) => index.offsetAt(i))) / MIB);
    const wanted = small.filter((i) => Math.floor(index.offsetAt(i) / MIB) === window && index.endOf(index.offsetAt(i)) <= (window + 1) * MIB).slice(0, 50);
    expect(wanted.length).toBe(50);
    const objects = await Promise.all(wanted.map((i) => reader.read(index.oidAt(i), false)));
    expect(objects.map((o) => o?.oid)).toEqual(wanted.map((i) => index.oidAt(i)));
    expect(ranges).toEqual([window * MIB]);
  });

  it("reads an object by itself for a point read: a small block around it, not its 1 MiB window", async () => {
    const { fs, pack, idx } = await bigPack();
    const adapter = createFsAdapter(fs);
    const ranges: { position: number; length: number }[] = [];
    let opens = 0;
    const counting: FsAdapter = {
      ...adapter,
      readRange(path, position, length) {
        if (path === pack) ranges.push({ position, length });
        return adapter.readRange(path, position, length);
      },
      async open(path, flags) {
        const handle = await adapter.open(path, flags);
        if (path !== pack) return handle;
        opens++;
        return {
          ...handle,
          read: (buffer, offset, length, position) => {
            ranges.push({ position, length });
            return handle.read(buffer, offset, length, position);
          },
          close: () => handle.close(),
        };
      },
    };
    const reader = createPackReader({ fs: counting, quickFs: counting, packDir: `${GITDIR}/objects/pack`, repoKey: "r", packBytes: new ScopedLruCache(64 << 20), packWindows: new ScopedLruCache(64 << 20) });
    const index = parsePackIndex("p", fs.readFileSync(idx) as Uint8Array, fs.statSync(pack).size as number);
    const small = [...Array(index.count).keys()].filter((i) => index.endOf(index.offsetAt(i)) - index.offsetAt(i) < 1_000);
    // Scattered objects, as a commit's edit reads the folders of runs spread over a big deployment.
    const wanted = small.filter((_, k) => k % 97 === 0).slice(0, 20);
    expect(wanted.length).toBe(20);
    for (const i of wanted) {
      const object = await reader.read(index.oidAt(i), false, true);
      expect(object?.oid).toBe(index.oidAt(i));
    }
    expect(ranges.length).toBeGreaterThan(0);
    expect(ranges.length).toBeLessThanOrEqual(wanted.length);
    for (const r of ranges) expect(r.length).toBeLessThanOrEqual(64 * 1024);
    // The pack is opened once for all of them, and closed with the reader.
    expect(opens).toBe(1);
    await reader.close();
    // A walk's read of the same pack still reads a whole window.
    ranges.length = 0;
    const far = small[small.length - 1] as number;
    expect((await reader.read(index.oidAt(far), false))?.oid).toBe(index.oidAt(far));
    expect(ranges.map((r) => r.length)).toEqual([expect.any(Number)]);
    expect((ranges[0] as { length: number }).length).toBeGreaterThan(64 * 1024);
  });

  it("refuses a point-read entry whose bytes no longer match its CRC-32 as object_corrupt", async () => {
    const { fs, pack, idx } = await bigPack();
    const bytes = Buffer.from(fs.readFileSync(pack) as Uint8Array);
    const at = bytes.indexOf('"i":1234}');
    bytes[at + 5] = "9".charCodeAt(0);
    fs.writeFileSync(pack, bytes);
    const index = parsePackIndex("p", fs.readFileSync(idx) as Uint8Array, bytes.length);
    const adapter = createFsAdapter(fs);
    const reader = createPackReader({ fs: adapter, quickFs: adapter, packDir: `${GITDIR}/objects/pack`, repoKey: "r", packBytes: new ScopedLruCache(64 << 20), packWindows: new ScopedLruCache(64 << 20) });
    let hit = -1;
    for (let i = 0; i < index.count; i++) {
      const offset = index.offsetAt(i);
      if (offset <= at && at < index.endOf(offset)) hit = i;
    }
    expect(hit).toBeGreaterThanOrEqual(0);
    await expect(reader.read(index.oidAt(hit), false, true)).rejects.toMatchObject({ code: "object_corrupt" });
  });

  it("commits edits of runs spread over it to the same tree, read by point reads or not", async () => {
    const { fs } = await bigPack();
    const copy = createMemFs();
    for (const [path, bytes] of walkFiles(fs, GITDIR)) {
      copy.mkdirSync(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      copy.writeFileSync(path, bytes);
    }
    const puts: Record<string, string> = {};
    for (let i = 3; i < 2_000; i += 211) puts[`runs/r${String(i).padStart(4, "0")}/events/2.json`] = `{"seq":2,"type":"Noted","i":${i}}`;
    const roots: string[] = [];
    for (const [target, prevalidated] of [[fs, true], [copy, false]] as const) {
      const { store } = createMemStore({ fs: target, packThreshold: 3 });
      const result = await store.writeTreeDelta(null, REPO, "main", { message: "edit", prevalidated, computeDelta: () => ({ puts }) });
      expect(result.committed).toBe(true);
      const reads = await store.openCommittedReads(null, REPO, "main");
      roots.push((await reads.treeOid("")) as string);
      for (const [path, body] of Object.entries(puts)) expect(text(await reads.readBlob(path))).toBe(body);
      expect(text(await reads.readBlob("runs/r0004/events/1.json"))).toBe('{"seq":1,"type":"Noted","i":4}');
      await store.close();
    }
    expect(roots[0]).toMatch(/^[0-9a-f]{40}$/);
    expect(roots[0]).toBe(roots[1]);
  });

  it("refuses an entry whose bytes no longer match the CRC-32 of its index as object_corrupt", async () => {
    const { fs, pack, idx } = await bigPack();
    // Flip one byte inside the entry of one small event (a stored zlib stream: its bytes are the event's).
    const bytes = Buffer.from(fs.readFileSync(pack) as Uint8Array);
    const at = bytes.indexOf('"i":1234}');
    expect(at).toBeGreaterThan(0);
    bytes[at + 5] = "9".charCodeAt(0);
    fs.writeFileSync(pack, bytes);
    const index = parsePackIndex("p", fs.readFileSync(idx) as Uint8Array, bytes.length);
    expect(index.count).toBeGreaterThan(2_000);
    const { store } = createMemStore({ fs });
    const reads = await store.openCommittedReads(null, REPO, "main");
    await expect(reads.readBlob("runs/r1234/events/1.json")).rejects.toMatchObject({ code: "object_corrupt" });
    // Its neighbours, in the same window, are intact.
    expect(text(await reads.readBlob("runs/r1233/events/1.json"))).toBe('{"seq":1,"type":"Noted","i":1233}');
    await store.close();
  });
});
