import { describe, expect, it } from "vitest";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

/** A memfs whose calls fail with `errno` while `failing` matches their name. */
function faultyFs(): { fs: MemFs; fail(errno: string | null, calls?: RegExp): void } {
  const inner = createMemFs();
  let errno: string | null = null;
  let calls = /./;
  const check = (name: string): void => {
    if (errno === null || !calls.test(name)) return;
    const error = new Error(`${errno}: simulated, ${name}`) as NodeJS.ErrnoException;
    error.code = errno;
    error.syscall = name.replace(/Sync$/, "");
    throw error;
  };
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, key, receiver) {
        const value = Reflect.get(t, key, receiver) as unknown;
        if (typeof value !== "function" || typeof key !== "string") return value;
        return (...args: unknown[]) => {
          check(key);
          return (value as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  const promises = wrap(inner.promises);
  const fs = new Proxy(inner, {
    get(t, key, receiver) {
      if (key === "promises") return promises;
      return Reflect.get(wrap(t), key, receiver) as unknown;
    },
  });
  return {
    fs,
    fail(next, which = /./) {
      errno = next;
      calls = which;
    },
  };
}

describe("file-system failures are io_failed with the errno, never untyped", () => {
  it.each(["ENOSPC", "EROFS", "EIO"])("a write failing with %s", async (errno) => {
    const faulty = faultyFs();
    const { store } = createMemStore({ fs: faulty.fs });
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    faulty.fail(errno, /^(open|write|writeFile|rename|mkdir)(Sync)?$/);
    const error = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "m" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "io_failed", data: { errno } });
    faulty.fail(null);
    expect(await store.resolveRef(null, REPO, "main")).toBe(genesis);
    const after = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "m" });
    expect(after).toMatchObject({ committed: true, parentSha: genesis });
    await store.close();
  });

  it("a read failing with EIO", async () => {
    const faulty = faultyFs();
    const { store } = createMemStore({ fs: faulty.fs });
    await store.initRepo(null, REPO);
    faulty.fail("EIO", /^(readFile|read)(Sync)?$/);
    await expect(store.resolveRef(null, REPO, "main")).rejects.toMatchObject({ code: "io_failed", data: { errno: "EIO" } });
    faulty.fail(null);
    await store.close();
  });
});
