/**
 * Containment on memfs: which folder below a repository is the link does not matter, a write
 * through it is refused with path_escapes_data_dir and leaves the outside as it was; and once a
 * folder is checked, commits make no further realpath call. (memfs cannot rename within a linked
 * folder, so links that stay inside are tested on real disk: symlink-containment.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";
import { createMemFs, type MemFs } from "../../helpers/memfs.js";
import { settledCode } from "../../helpers/expect-code.js";

/** Every path under `dir` with its content (files) or "dir". */
function listing(fs: MemFs, dir: string): string[] {
  const out: string[] = [];
  const walk = (at: string): void => {
    for (const name of (fs.readdirSync(at) as string[]).sort()) {
      const path = `${at}/${name}`;
      const stat = fs.lstatSync(path);
      out.push(stat.isDirectory() ? `${path}/` : `${path} ${String(fs.readFileSync(path))}`);
      if (stat.isDirectory()) walk(path);
    }
  };
  walk(dir);
  return out;
}

/** Moves `path` to `target` (outside the data dir) and puts a link to it in its place. */
function replaceByLink(fs: MemFs, path: string, target: string): void {
  fs.mkdirSync(target.slice(0, target.lastIndexOf("/")), { recursive: true });
  fs.renameSync(path, target);
  fs.symlinkSync(target, path);
}


const write = (n: number) => ({ files: { [`runs/r${n}/events/1.json`]: `{"seq":1,"type":"Started","data":{"n":${n}}}` }, message: `write ${n}` });

describe("containment over memfs", () => {
  it("refuses to make a repository where a dangling link stands (path_escapes_data_dir), making nothing through it", async () => {
    const fs = createMemFs();
    fs.mkdirSync(GITDIR.slice(0, GITDIR.lastIndexOf("/")), { recursive: true });
    fs.mkdirSync("/outside", { recursive: true });
    fs.symlinkSync("/outside/missing.git", GITDIR);
    const { store } = createMemStore({ fs });
    try {
      expect(await settledCode(() => store.initRepo(null, REPO))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(listing(fs, "/outside")).toEqual([]);
    expect(fs.readlinkSync(GITDIR)).toBe("/outside/missing.git");
  });

  for (const folder of ["", "refs", "refs/heads", "objects", "objects/pack"]) {
    for (const packed of [false, true]) {
      it(`refuses a write through a link at ${folder === "" ? "the repository folder" : folder} (${packed ? "packs" : "loose objects"}) and writes nothing outside`, async () => {
        const fs = createMemFs();
        const opts = packed ? { fs, packThreshold: 1 } : { fs };
        const first = createMemStore(opts).store;
        await first.initRepo(null, REPO);
        await first.writeTree(null, REPO, "main", write(1));
        await first.close();
        const path = folder === "" ? GITDIR : `${GITDIR}/${folder}`;
        replaceByLink(fs, path, `/outside/${folder === "" ? "repo" : folder}`);
        const before = listing(fs, "/outside");
        const { store } = createMemStore(opts);
        try {
          expect(await settledCode(() => store.writeTree(null, REPO, "main", write(2)))).toBe("path_escapes_data_dir");
        } finally {
          await store.close();
        }
        expect(listing(fs, "/outside")).toEqual(before);
      });
    }
  }

  it("makes no realpath call per commit once the folders a commit uses are checked", async () => {
    const fs = createMemFs();
    const realpathSync = fs.realpathSync.bind(fs);
    let calls = 0;
    (fs as { realpathSync: unknown }).realpathSync = (path: string) => {
      calls += 1;
      return realpathSync(path);
    };
    const { store } = createMemStore({ fs, packThreshold: 1 });
    try {
      await store.initRepo(null, REPO);
      await store.writeTree(null, REPO, "main", write(0));
      expect(calls).toBeGreaterThan(0);
      calls = 0;
      for (let n = 1; n <= 30; n++) await store.writeTree(null, REPO, "main", write(n));
      expect(calls).toBe(0);
    } finally {
      await store.close();
    }
  });
});
