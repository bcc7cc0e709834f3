import { describe, expect, it } from "vitest";
import { asIoFailure, createBlockingFsAdapter, createFsAdapter, errnoCode } from "../../../src/substrate/fs-adapter.js";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";
import { createFaultyMemFs } from "../../helpers/faulty-memfs.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";

/** A memfs whose calls fail with `errno` while `calls` matches their name. */
function faultyFs(): { fs: MemFs; fail(errno: string | null, calls?: RegExp): void } {
  let errno: string | null = null;
  let calls = /./;
  const fs = createFaultyMemFs((call) => (errno !== null && calls.test(call) ? errno : null));
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

/**
 * memfs behaving as node does on a read-only file system: a recursive mkdir says ENOENT (on the
 * first level it could not make), a plain mkdir says EROFS.
 */
function readOnlyBelow(root: string): MemFs {
  const inner = createMemFs();
  inner.mkdirSync(root, { recursive: true });
  const refuse = (path: unknown, opts: unknown): void => {
    if (typeof path !== "string" || !path.startsWith(`${root}/`)) return;
    const recursive = typeof opts === "object" && opts !== null && (opts as { recursive?: boolean }).recursive === true;
    const error = new Error(recursive ? `ENOENT: no such file or directory, mkdir '${path}'` : `EROFS: read-only file system, mkdir '${path}'`) as NodeJS.ErrnoException;
    error.code = recursive ? "ENOENT" : "EROFS";
    error.syscall = "mkdir";
    error.path = path;
    throw error;
  };
  const promises = new Proxy(inner.promises, {
    get(t, key, receiver) {
      const value = Reflect.get(t, key, receiver) as unknown;
      if (key !== "mkdir" || typeof value !== "function") return value;
      return async (path: unknown, opts: unknown) => {
        refuse(path, opts);
        return (value as (...a: unknown[]) => unknown).call(t, path, opts);
      };
    },
  });
  return new Proxy(inner, {
    get(t, key, receiver) {
      if (key === "promises") return promises;
      const value = Reflect.get(t, key, receiver) as unknown;
      if (key !== "mkdirSync" || typeof value !== "function") return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      return (path: unknown, opts: unknown) => {
        refuse(path, opts);
        return (value as (...a: unknown[]) => unknown).call(t, path, opts);
      };
    },
  });
}

describe("the cause of a failed mkdir and its wording", () => {
  it.each([
    ["promise", createFsAdapter],
    ["blocking", (m: unknown) => createBlockingFsAdapter(m)],
  ] as const)("the %s adapter's mkdirp on a read-only file system names EROFS and the folder it could not make, not ENOENT", async (_name, make) => {
    const adapter = make(readOnlyBelow("/ro"));
    const error = await adapter.mkdirp("/ro/a/b/c").catch((e: unknown) => e);
    expect({ errno: errnoCode(error), path: (error as { path?: string }).path }).toEqual({ errno: "EROFS", path: "/ro/a" });
    const typed = asIoFailure(error, "creating the data dir");
    expect(typed).toMatchObject({ code: "io_failed", data: { errno: "EROFS", path: "/ro/a" } });
    expect((typed as Error).message).toContain("/ro/a");
  });

  it.each([
    ["ENOTDIR", "not_a_folder"],
    ["EISDIR", "is_a_folder"],
    ["EROFS", "read_only"],
    ["ENOSPC", "full"],
    ["EACCES", "permission_denied"],
  ])("io_failed for %s says what it means (data.cause %s) and names the path", (errno, cause) => {
    const raw = Object.assign(new Error(errno), { code: errno, syscall: "open", path: "/data/x/y" });
    const typed = asIoFailure(raw, "reading /data/x/y");
    expect(typed).toMatchObject({ code: "io_failed", data: { errno, cause, path: "/data/x/y" } });
    expect((typed as Error).message).toContain("/data/x/y");
  });
});
