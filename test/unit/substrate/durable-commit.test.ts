import { describe, expect, it } from "vitest";
import { GITDIR, REPO, createMemStore } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";
import { outOfTurns } from "../../helpers/wait-turns.js";

type Op = { readonly op: "flush"; readonly path: string } | { readonly op: "rename"; readonly from: string; readonly to: string };

/** Holds the flushes of pack temp files while closed. */
interface PackFlushGate {
  closed: boolean;
  readonly waiting: (() => void)[];
}

/**
 * A memfs whose flushes (fsync, FileHandle.sync) and renames are logged in call order; while
 * `gate` is closed, the flush of a pack temp file does not complete.
 */
function recordingFs(gate: PackFlushGate = { closed: false, waiting: [] }): { fs: MemFs; ops: Op[] } {
  const held = async (path: string): Promise<void> => {
    if (gate.closed && kind(path) === "pack") await new Promise<void>((resolve) => gate.waiting.push(resolve));
  };
  const inner = createMemFs();
  const ops: Op[] = [];
  const pathOfFd = new Map<number, string>();
  const promises = new Proxy(inner.promises, {
    get(target, prop) {
      if (prop === "rename") {
        return async (from: string, to: string) => {
          await target.rename(from, to);
          ops.push({ op: "rename", from, to });
        };
      }
      if (prop !== "open") return Reflect.get(target, prop) as unknown;
      return async (path: string, flags?: string, mode?: number) => {
        const handle = await target.open(path, flags, mode);
        return new Proxy(handle, {
          get(h, p) {
            const value = Reflect.get(h, p) as unknown;
            if (p === "sync" || p === "datasync") {
              return async () => {
                await (value as () => Promise<void>).call(h);
                await held(path);
                ops.push({ op: "flush", path });
              };
            }
            return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(h) : value;
          },
        });
      };
    },
  });
  const fs = new Proxy(inner, {
    get(target, prop) {
      if (prop === "promises") return promises;
      if (prop === "openSync") {
        return (path: string, flags: string, mode?: number) => {
          const fd = target.openSync(path, flags, mode);
          pathOfFd.set(fd, path);
          return fd;
        };
      }
      if (prop === "renameSync") {
        return (from: string, to: string) => {
          target.renameSync(from, to);
          ops.push({ op: "rename", from, to });
        };
      }
      if (prop === "fsync" || prop === "fdatasync") {
        return (fd: number, callback: (error: Error | null) => void) => {
          const path = pathOfFd.get(fd) ?? `fd ${fd}`;
          target.fsync(fd, (error) => {
            void held(path).then(() => {
              if (error === null || error === undefined) ops.push({ op: "flush", path });
              callback((error ?? null) as Error | null);
            });
          });
        };
      }
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { fs: fs as MemFs, ops };
}

/** What a flushed path is: a pack or index temp file, a ref lock, a folder. */
function kind(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  if (name.startsWith("tmp_pack_")) return "pack";
  if (name.startsWith("tmp_idx_")) return "idx";
  if (name.endsWith(".lock")) return "ref";
  return `folder ${path.slice(GITDIR.length + 1)}`;
}

describe("a durable commit", () => {
  it("flushes pack and index before placing them, the ref before moving it, and the ref's folder once after", async () => {
    const { fs, ops } = recordingFs();
    const { store } = createMemStore({ fs, packThreshold: 3, durability: "fsync" });
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": '{"seq":1}' }, message: "first" });
    ops.length = 0;

    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/2.json": '{"seq":2}' }, message: "second" });

    const flushes = ops.filter((o): o is Op & { op: "flush" } => o.op === "flush").map((o) => kind(o.path));
    // Pack, index and the ref's lock in any order (they are flushed together), then one folder.
    expect([...flushes.slice(0, 3)].sort()).toEqual(["idx", "pack", "ref"]);
    expect(flushes.slice(3)).toEqual(["folder refs/heads"]);

    const at = (match: (o: Op) => boolean): number => ops.findIndex(match);
    const packPlaced = at((o) => o.op === "rename" && o.to.endsWith(".pack"));
    const idxPlaced = at((o) => o.op === "rename" && o.to.endsWith(".idx"));
    const refMoved = at((o) => o.op === "rename" && o.to === `${GITDIR}/refs/heads/main`);
    const flushed = (k: string): number => at((o) => o.op === "flush" && kind(o.path) === k);
    expect(Math.max(flushed("pack"), flushed("idx"))).toBeLessThan(packPlaced);
    expect(packPlaced).toBeLessThan(idxPlaced);
    expect(idxPlaced).toBeLessThan(refMoved);
    expect(flushed("ref")).toBeLessThan(refMoved);
    expect(refMoved).toBeLessThan(flushed("folder refs/heads"));
    await store.close();
  });

  it("flushes the ref's lock while the pack is still being flushed, and moves the ref only after both", async () => {
    const gate: PackFlushGate = { closed: false, waiting: [] };
    const { fs, ops } = recordingFs(gate);
    const { store } = createMemStore({ fs, packThreshold: 3, durability: "fsync" });
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": '{"seq":1}' }, message: "first" });
    ops.length = 0;
    gate.closed = true;

    const writing = store.writeTree(null, REPO, "main", { files: { "runs/r1/events/2.json": '{"seq":2}' }, message: "second" });
    const flushedKinds = (): string[] => ops.filter((o): o is Op & { op: "flush" } => o.op === "flush").map((o) => kind(o.path));
    // Waits on the commit's own steps (event-loop turns, never time) for the lock's flush.
    const since = performance.now();
    for (let turn = 0; !outOfTurns(turn, 1_000, since) && !flushedKinds().includes("ref"); turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(flushedKinds()).toContain("ref");
    expect(flushedKinds()).not.toContain("pack");
    expect(ops.some((o) => o.op === "rename" && o.to === `${GITDIR}/refs/heads/main`)).toBe(false);

    gate.closed = false;
    for (const resume of gate.waiting.splice(0)) resume();
    await writing;
    const at = (match: (o: Op) => boolean): number => ops.findIndex(match);
    const refMoved = at((o) => o.op === "rename" && o.to === `${GITDIR}/refs/heads/main`);
    expect(at((o) => o.op === "flush" && kind(o.path) === "pack")).toBeLessThan(refMoved);
    expect(at((o) => o.op === "rename" && o.to.endsWith(".idx"))).toBeLessThan(refMoved);
    await store.close();
  });
});
