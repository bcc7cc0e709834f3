import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createBlockingFsAdapter, createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { type GitObject, hashObject } from "../../../src/substrate/git-object.js";
import { ScopedLruCache } from "../../../src/substrate/lru-cache.js";
import { createPackStore } from "../../../src/substrate/pack-store.js";
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

describe("a pack this process wrote", () => {
  it("is read from the bytes written (every object, in memory and not) while its file is gone, an entry across its pieces included", async () => {
    const mem = createMemFs();
    const store = openStore(mem);
    const objects = someObjects();
    await store.write(objects);
    const path = packFile(mem);
    const onDisk = Buffer.from(mem.readFileSync(path) as Uint8Array);
    // The file is gone: only the kept bytes can answer.
    mem.unlinkSync(path);
    for (const object of objects) {
      const read = await store.read(object.oid, false);
      expect(read?.type).toBe(object.type);
      expect(Buffer.from(read?.content as Uint8Array).equals(Buffer.from(object.content))).toBe(true);
      const inMemory = store.readInMemory(object.oid, true);
      expect(Buffer.from(inMemory?.content as Uint8Array).equals(Buffer.from(object.content))).toBe(true);
    }
    // The bytes taken are the file's bytes (trailer included).
    mem.writeFileSync(path, onDisk);
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
});
