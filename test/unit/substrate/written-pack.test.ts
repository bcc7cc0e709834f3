import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createBlockingFsAdapter, createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { type GitObject, hashObject } from "../../../src/substrate/git-object.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { MAX_PACKS } from "../../../src/substrate/pack-maintenance.js";
import { PACK_CHECKSUM_WARNING } from "../../../src/substrate/pack-reader.js";
import { createPackStore } from "../../../src/substrate/pack-store.js";
import { PackedObjects } from "../../../src/substrate/packed-objects.js";
import { GITDIR } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

function openStore(mem: MemFs) {
  mem.mkdirSync(`${GITDIR}/objects/pack`, { recursive: true });
  return createPackStore({ fs: createFsAdapter(mem), quickFs: createBlockingFsAdapter(mem), gitdir: GITDIR, repoKey: GITDIR, packBytes: new ScopedLruCache(64 << 20), durable: false, clock: () => new Date() });
}

function packFile(mem: MemFs): string {
  const name = (mem.readdirSync(`${GITDIR}/objects/pack`) as string[]).find((n) => n.endsWith(".pack")) as string;
  return `${GITDIR}/objects/pack/${name}`;
}

/** Small blobs and trees (laid out in place) and big ones (referenced as pieces of the pack). */
function someObjects(): GitObject[] {
  const objects: GitObject[] = [];
  for (let i = 0; i < 40; i++) objects.push(hashObject("blob", Buffer.from(`{"seq":${i},"pad":"${"x".repeat(i * 7)}"}`)));
  objects.push(hashObject("blob", randomBytes(200_000)));
  objects.push(hashObject("tree", Buffer.concat([Buffer.from("100644 a\0", "latin1"), Buffer.from((objects[0] as GitObject).oid, "hex")])));
  objects.push(hashObject("blob", Buffer.alloc(90_000, 7)));
  return objects;
}

/** `objects` built into pack entries as a fire commit builds its events and folders. */
function packedOf(objects: readonly GitObject[]): PackedObjects {
  const packed = new PackedObjects(16, 4_096);
  for (const o of objects) {
    const at = packed.begin(o.content.byteLength);
    packed.buffer.set(o.content, at);
    packed.finish(o.type === "tree");
  }
  return packed;
}

describe("a pack this process wrote", () => {
  it("is read from the bytes written while its file is gone, except an object's own bytes lent to it (read from the file)", async () => {
    const mem = createMemFs();
    const store = openStore(mem);
    const all = someObjects();
    const built = all.slice(0, 30);
    const objects = all.slice(30);
    const big = objects.find((o) => o.content.byteLength === 200_000) as GitObject;
    const bigCopy = Buffer.from(big.content);
    const staged = store.stage(objects, undefined, packedOf(built));
    await staged.publish();
    // The big blob's bytes went into the pack as a view of its own buffer: its owner writes over
    // them now (a reused buffer); the pack file has the right ones.
    (big.content as Uint8Array).fill(0);
    const read = await store.read(big.oid, false);
    expect(Buffer.from(read?.content as Uint8Array).equals(bigCopy)).toBe(true);
    (big.content as Uint8Array).set(bigCopy);
    const path = packFile(mem);
    // The file is gone: only the kept bytes can answer for the rest.
    mem.unlinkSync(path);
    for (const object of [...built, ...objects.filter((o) => o.content.byteLength < 65_536)]) {
      const again = await store.read(object.oid, false);
      expect(again?.type).toBe(object.type);
      expect(Buffer.from(again?.content as Uint8Array).equals(Buffer.from(object.content))).toBe(true);
      const inMemory = store.readInMemory(object.oid, true);
      expect(Buffer.from(inMemory?.content as Uint8Array).equals(Buffer.from(object.content))).toBe(true);
    }
    await store.close();
  });

  it("is taken in memory at once by readInMemory (no read of the file first)", async () => {
    const mem = createMemFs();
    const store = openStore(mem);
    const objects = someObjects().slice(0, 40);
    await store.write(objects);
    mem.unlinkSync(packFile(mem));
    const first = objects[3] as GitObject;
    expect(Buffer.from(store.readInMemory(first.oid, true)?.content as Uint8Array).toString()).toBe(Buffer.from(first.content).toString());
    await store.close();
  });

  it("is not kept past a fresh store: a new store reads the file", async () => {
    const mem = createMemFs();
    const store = openStore(mem);
    const objects = someObjects().slice(0, 10);
    await store.write(objects);
    await store.close();
    const again = openStore(mem);
    const path = packFile(mem);
    const bytes = Buffer.from(mem.readFileSync(path) as Uint8Array);
    // A flipped byte in an entry: the fresh store reads the file, which fails its checksum.
    bytes[20] = (bytes[20] as number) ^ 0xff;
    mem.writeFileSync(path, bytes);
    const results = await Promise.allSettled(objects.map((o) => again.read(o.oid, false)));
    expect(results.some((r) => r.status === "rejected" || r.value === null || !Buffer.from(r.value.content).equals(Buffer.from((objects[results.indexOf(r)] as GitObject).content)))).toBe(true);
    await again.close();
  });

  /** `n` distinct small blobs (laid out in the pack's own buffer, not lent): ~1 KB each. */
  const smallBlobs = (n: number): GitObject[] => Array.from({ length: n }, () => hashObject("blob", randomBytes(1_000)));

  it("is kept within one budget for the whole process, oldest first whichever store wrote it", async () => {
    const memA = createMemFs();
    const memB = createMemFs();
    const a = openStore(memA);
    const b = openStore(memB);
    // ~7 MB by store A, then ~28 MB by store B: 35 MB written, over the 32 MiB kept.
    const first = smallBlobs(7_000);
    await a.write(first);
    const later: GitObject[][] = [];
    for (let i = 0; i < 4; i++) {
      later.push(smallBlobs(7_000));
      await b.write(later[i] as GitObject[]);
    }
    // Nothing read a pack file, so only kept bytes answer readInMemory: A's pack, the oldest,
    // was let go for B's (each store alone is under the budget); B's four are kept.
    expect(a.readInMemory((first[0] as GitObject).oid, true)).toBeUndefined();
    for (const objects of later) {
      const object = objects[objects.length - 1] as GitObject;
      expect(Buffer.from(b.readInMemory(object.oid, true)?.content as Uint8Array).equals(Buffer.from(object.content))).toBe(true);
    }
    // The one let go is still read, from its file.
    expect(Buffer.from((await a.read((first[0] as GitObject).oid, false))?.content as Uint8Array).equals(Buffer.from((first[0] as GitObject).content))).toBe(true);
    await a.close();
    await b.close();
  });

  it("gives its share of the budget back when its store is closed", async () => {
    const memA = createMemFs();
    const memB = createMemFs();
    const b = openStore(memB);
    const later: GitObject[][] = [];
    for (let i = 0; i < 4; i++) {
      // A writes ~7 MB between B's second and third pack, and is closed.
      if (i === 2) {
        const a = openStore(memA);
        await a.write(smallBlobs(7_000));
        await a.close();
      }
      later.push(smallBlobs(7_000));
      await b.write(later[i] as GitObject[]);
    }
    // 28 MB kept by B alone: its oldest is still kept (with A's 7 MB still counted, 35 MB, it
    // was the oldest let go).
    const oldest = (later[0] as GitObject[])[0] as GitObject;
    expect(Buffer.from(b.readInMemory(oldest.oid, true)?.content as Uint8Array).equals(Buffer.from(oldest.content))).toBe(true);
    await b.close();
  });

  it("whose file is truncated or deleted since is left out of merges once a merge fails on it; the others merge on", async () => {
    for (const damage of ["truncate", "delete"] as const) {
      const mem = createMemFs();
      const store = openStore(mem);
      const warnings: string[] = [];
      const onWarning = (warning: Error & { code?: string }): void => {
        if (warning.code === PACK_CHECKSUM_WARNING) warnings.push(warning.message);
      };
      process.on("warning", onWarning);
      try {
        const blobs = smallBlobs(MAX_PACKS + 1);
        const packDir = `${GITDIR}/objects/pack`;
        const packNames = (): string[] => (mem.readdirSync(packDir) as string[]).filter((n) => n.endsWith(".pack"));
        for (let i = 0; i < MAX_PACKS; i++) {
          const before = new Set(packNames());
          await store.write([blobs[i] as GitObject]);
          // The newest pack (kept as written: reads of it never meet its file) is damaged on disk.
          if (i === MAX_PACKS - 1) {
            const newest = `${packDir}/${packNames().find((n) => !before.has(n)) as string}`;
            if (damage === "delete") mem.unlinkSync(newest);
            else mem.writeFileSync(newest, (mem.readFileSync(newest) as Buffer).subarray(0, 40));
          }
        }
        // One pack more than MAX_PACKS: a merge of them all fails on the damaged file, which is
        // then left out, and the other 16 merge into one.
        await store.write([blobs[MAX_PACKS] as GitObject]);
        store.maintain();
        await store.idle();
        expect(packNames().length).toBe(damage === "delete" ? 1 : 2);
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings.length).toBe(damage === "delete" ? 0 : 1);
        for (const [i, blob] of blobs.entries()) {
          if (i === MAX_PACKS - 1) continue;
          expect(Buffer.from((await store.read(blob.oid, false))?.content as Uint8Array).equals(Buffer.from(blob.content))).toBe(true);
        }
      } finally {
        process.off("warning", onWarning);
        await store.close();
      }
    }
  });
});
