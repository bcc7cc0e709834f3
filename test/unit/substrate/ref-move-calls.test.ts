/**
 * Which calls move a ref: the rename of `<ref>.lock` over the ref waits on the disk (ext4 starts
 * writing the lock's bytes back when a rename replaces a file: `auto_da_alloc`), so it goes
 * through the thread pool, while the other calls of a ref move stay blocking (see
 * bench/design-notes.md, "Lateness at 1,000 fires/s").
 */
import { describe, expect, it } from "vitest";
import { GITDIR, REPO, createMemStore } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

/** A memfs counting renames onto `target`, blocking (renameSync) and through promises apart. */
function countingFs(target: string): { fs: MemFs; renames: { blocking: number; pooled: number } } {
  const inner = createMemFs();
  const renames = { blocking: 0, pooled: 0 };
  const promises = new Proxy(inner.promises, {
    get(t, prop) {
      if (prop === "rename") {
        return async (from: string, to: string) => {
          if (to === target) renames.pooled++;
          await t.rename(from, to);
        };
      }
      const value = Reflect.get(t, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
  const fs = new Proxy(inner, {
    get(t, prop) {
      if (prop === "promises") return promises;
      if (prop === "renameSync") {
        return (from: string, to: string) => {
          if (to === target) renames.blocking++;
          t.renameSync(from, to);
        };
      }
      const value = Reflect.get(t, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
  return { fs: fs as MemFs, renames };
}

describe("a ref move", () => {
  for (const durability of ["none", "fsync"] as const) {
    it(`renames the lock over the ref through the thread pool, once per commit (durability ${durability})`, async () => {
      const { fs, renames } = countingFs(`${GITDIR}/refs/heads/main`);
      const { store } = createMemStore({ fs, packThreshold: 3, durability });
      await store.initRepo(null, REPO);
      for (let seq = 1; seq <= 5; seq++) {
        await store.writeTree(null, REPO, "main", { files: { [`runs/r1/events/${seq}.json`]: `{"seq":${seq}}` }, message: `event ${seq}` });
      }
      expect(renames).toEqual({ blocking: 0, pooled: 6 });
      expect(fs.readFileSync(`${GITDIR}/refs/heads/main`, "latin1")).toMatch(/^[0-9a-f]{40}\n$/);
      await store.close();
    });
  }
});
