/**
 * A commit's pack at the size a 10,000-run deployment's fire commit has (its `runs/` folder is
 * ~400 KB, more than QUICK_PACK_BYTES) is written into the temp file pair made ahead of it, as a
 * small pack is: no file is created on the commit's path. Its bytes go through the thread pool
 * (the event loop is not held for the write), a small pack's through the quick adapter. A merge's
 * pack of the same size still goes into files of its own. (The pool makes the next spare pair
 * in the background, off the commit's path.)
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createBlockingFsAdapter, createFsAdapter, type FileHandleLike, type FsAdapter } from "../../../src/substrate/fs-adapter.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { encodePack } from "../../../src/substrate/pack-file.js";
import { QUICK_PACK_BYTES } from "../../../src/substrate/pack-reader.js";
import { createPackWriter } from "../../../src/substrate/pack-writer.js";
import { createMemFs } from "../../helpers/memfs.js";

const GITDIR = "/data/deployments/dep.git";

/**
 * `adapter` with every call recorded in `calls` (its name and first argument, a path) and, in
 * `order`, each file's flush (through a handle it opened) and rename, in the order they happened.
 */
function counted(adapter: FsAdapter, calls: [string, unknown][], order: string[]): FsAdapter {
  return new Proxy(adapter, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver) as unknown;
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push([String(key), args[0]]);
        if (key === "rename") order.push(`rename ${base(args[0])}`);
        const out = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (key !== "open") return out;
        return (out as Promise<FileHandleLike>).then((handle): FileHandleLike => ({
          write: (data) => handle.write(data),
          ...(handle.writev === undefined ? {} : { writev: (buffers: Uint8Array[]) => (handle.writev as NonNullable<FileHandleLike["writev"]>).call(handle, buffers) }),
          read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
          stat: () => handle.stat(),
          close: () => handle.close(),
          sync: async () => {
            await handle.sync();
            order.push(`sync ${base(args[0])}`);
          },
        }));
      };
    },
  });
}

const base = (path: unknown): string => String(path).slice(String(path).lastIndexOf("/") + 1);

/** A pack of one blob of `bytes` random (incompressible) bytes. */
const packOf = (bytes: number) => encodePack([hashObject("blob", randomBytes(bytes))]);

function setup(durable: boolean) {
  const mem = createMemFs();
  mem.mkdirSync(`${GITDIR}/objects/pack`, { recursive: true });
  const pool: [string, unknown][] = [];
  const quick: [string, unknown][] = [];
  const order: string[] = [];
  const writer = createPackWriter({
    fs: counted(createFsAdapter(mem), pool, order),
    quickFs: counted(createBlockingFsAdapter(mem), quick, order),
    gitdir: GITDIR,
    durable,
    clock: () => new Date(Date.parse("2030-01-01T00:00:00Z")),
  });
  const temps = (): string[] => (mem.readdirSync(`${GITDIR}/objects`) as string[]).filter((name) => name.startsWith("tmp_")).sort();
  /** The spare pair, once the writer has made it in the background. */
  const spare = async (): Promise<string[]> => {
    for (let turn = 0; turn < 1_000 && temps().length < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    return temps();
  };
  return { mem, pool, quick, order, writer, temps, spare };
}

describe("a commit's pack of a 10,000-run deployment", () => {
  for (const durable of [false, true]) {
    it(`goes into the spare pair made ahead, through the pool, creating no file (durable: ${durable})`, async () => {
      const { mem, pool, quick, order, writer, spare } = setup(durable);
      await writer.stage(packOf(1_000), false).publish();
      const pair = await spare();
      expect(pair).toHaveLength(2);
      const big = packOf(400 * 1024);
      expect(big.pack.byteLength).toBeGreaterThan(QUICK_PACK_BYTES);
      pool.length = 0;
      quick.length = 0;
      order.length = 0;
      const placed = await writer.stage(big, false).publish();
      // The spare's names are gone from objects/: they became the pack and its index.
      const next = await spare();
      expect(next.filter((name) => pair.includes(name))).toEqual([]);
      // No file was created for this pack: the only files made are the next spare pair.
      const created = [...pool, ...quick].filter(([call]) => call === "writeNewFile").map(([, path]) => base(path));
      expect(created.sort()).toEqual(next);
      // The spare pair was opened and written through the pool, not on the loop.
      expect(pool.filter(([call]) => call === "open").map(([, path]) => base(path)).sort()).toEqual(pair);
      expect(quick.filter(([call]) => call === "open")).toEqual([]);
      // Durable: both files' bytes are flushed before the first rename (the pack's), as before.
      const [packTemp, idxTemp] = [pair.find((n) => n.startsWith("tmp_pack_")), pair.find((n) => n.startsWith("tmp_idx_"))];
      const renames = order.filter((step) => step.startsWith("rename ")).slice(0, 2);
      expect(renames).toEqual([`rename ${packTemp}`, `rename ${idxTemp}`]);
      const flushed = order.slice(0, order.indexOf(`rename ${packTemp}`)).filter((step) => step.startsWith("sync ")).sort();
      expect(flushed).toEqual(durable ? [`sync ${idxTemp}`, `sync ${packTemp}`] : []);
      expect(Buffer.compare(mem.readFileSync(`${GITDIR}/objects/pack/${placed.name}.pack`) as Buffer, big.pack)).toBe(0);
      expect(Buffer.compare(mem.readFileSync(`${GITDIR}/objects/pack/${placed.name}.idx`) as Buffer, big.idx)).toBe(0);
      await writer.close();
    });
  }

  it("leaves a merge's pack of the same size to the pool, in files of its own", async () => {
    const { pool, writer, spare } = setup(false);
    await writer.stage(packOf(1_000), false).publish();
    const pair = await spare();
    pool.length = 0;
    await writer.stage(packOf(400 * 1024), true).publish();
    expect(pool.map(([call]) => call)).toContain("writeNewFile");
    expect(await spare()).toEqual(pair);
    await writer.close();
  });
});
