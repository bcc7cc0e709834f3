/**
 * No symbolic link inside a deployment's repository may lead a read or a write outside the data
 * dir. Real disk: for each folder the store reads or writes below a repository, a link to a
 * folder outside the data dir is put in its place (holding a copy of what was there, so the
 * repository still reads as whole through it); the store must refuse with
 * `path_escapes_data_dir` and leave the outside folder exactly as it was.
 */
import { cp, lstat, mkdir, readdir, readFile, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkDeployments } from "../../../src/host/check-deployments.js";
import { openWorkflowStore } from "../../../src/host/open-workflow-store.js";
import { mergeOnThread } from "../../../src/substrate/pack-merge-thread.js";
import type { RepoStore } from "../../../src/substrate/types.js";
import { appendRunEvents } from "../../../src/workflow/run-log-append.js";
import { WORKFLOW_RUN_KIND } from "../../../src/workflow/workflow-run-kind.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { dirSnapshot } from "../../helpers/dir-snapshot.js";
import { settledCode } from "../../helpers/expect-code.js";

const tempDir = useTempDirs("wh-symlink-");
const REPO = "dep-1";
const RID = { kind: WORKFLOW_RUN_KIND, id: REPO };
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", `${REPO}.git`);


async function setTimer(store: RepoStore, runId: string, timerId: string, ref?: string): Promise<unknown> {
  return appendRunEvents({
    store,
    principal: null,
    repoId: REPO,
    runId,
    ...(ref === undefined ? {} : { ref }),
    message: `set ${timerId}`,
    decide: () => ({ append: [{ type: "TimerSet", data: { timerId, fireAt: "2099-01-01T00:00:00Z" } }], result: undefined }),
  });
}

const snapshot = dirSnapshot;

/** Moves `path` (a folder or file) to `outside` and leaves a link to it in its place. */
async function replaceByLink(path: string, outside: string): Promise<void> {
  await cp(path, outside, { recursive: true });
  await rm(path, { recursive: true });
  await symlink(outside, path);
}

/** A deployment with one run and a timer set, written loose (`packThreshold: Infinity`) or packed. */
async function seededDataDir(loose = false): Promise<string> {
  const dataDir = await tempDir();
  const store = openWorkflowStore({ dataDir, watch: false, ...(loose ? { packThreshold: Number.POSITIVE_INFINITY } : {}) });
  await store.initRepo(null, RID);
  await setTimer(store, "r1", "t1");
  await store.close();
  return dataDir;
}

/**
 * The folders a commit passes through, each as the path below the repository and how to drive
 * the store into it. `prepare` may make the folder first (it must exist to be linked).
 */
const FOLDER_KINDS: ReadonlyArray<{ readonly name: string; readonly loose?: boolean; readonly prepare?: (gitdir: string) => Promise<void>; readonly drive: (store: RepoStore) => Promise<unknown> }> = [
  { name: "refs", drive: (store) => setTimer(store, "r2", "t2") },
  { name: "refs/heads", drive: (store) => setTimer(store, "r2", "t2") },
  { name: "objects/pack", drive: (store) => setTimer(store, "r2", "t2") },
  { name: "objects", drive: (store) => setTimer(store, "r2", "t2") },
  {
    name: "refs/heads/team",
    prepare: (gitdir) => mkdir(join(gitdir, "refs", "heads", "team"), { recursive: true }).then(() => undefined),
    drive: (store) => store.writeTree(null, RID, "refs/heads/team/a", { files: { "notes/a.txt": "a" }, message: "team ref" }),
  },
  {
    name: "refs/consumers",
    prepare: (gitdir) => mkdir(join(gitdir, "refs", "consumers"), { recursive: true }).then(() => undefined),
    drive: (store) => store.writeTree(null, RID, "refs/consumers/mailer", { files: { "progress/a.txt": "a" }, message: "consumer ref" }),
  },
  {
    name: "workflow-host",
    prepare: (gitdir) => mkdir(join(gitdir, "workflow-host"), { recursive: true }).then(() => undefined),
    drive: (store) => (store.writeDerived as NonNullable<RepoStore["writeDerived"]>)(null, RID, "index", new Uint8Array([1, 2, 3])),
  },
];

describe("a link inside a deployment that leads outside the data dir", () => {
  for (const kind of FOLDER_KINDS) {
    it(`at ${kind.name}: the write is refused with path_escapes_data_dir and nothing lands outside`, async () => {
      const dataDir = await seededDataDir(kind.loose);
      const gitdir = gitdirOf(dataDir);
      await kind.prepare?.(gitdir);
      const outside = join(await tempDir(), "elsewhere");
      await replaceByLink(join(gitdir, kind.name), outside);
      const before = await snapshot(outside);

      const store = openWorkflowStore({ dataDir, watch: false });
      try {
        expect(await settledCode(() => kind.drive(store))).toBe("path_escapes_data_dir");
      } finally {
        await store.close();
      }
      expect(await snapshot(outside)).toEqual(before);
    });
  }

  it("at every objects/<xx> folder: a loose object write is refused and nothing lands outside", async () => {
    const dataDir = await seededDataDir(true);
    const gitdir = gitdirOf(dataDir);
    const outside = join(await tempDir(), "elsewhere");
    await mkdir(outside);
    for (let i = 0; i < 256; i++) {
      const xx = i.toString(16).padStart(2, "0");
      const folder = join(gitdir, "objects", xx);
      const target = join(outside, xx);
      await mkdir(target);
      const there = await stat(folder).catch(() => null);
      if (there !== null) {
        await cp(folder, target, { recursive: true });
        await rm(folder, { recursive: true });
      }
      await symlink(target, folder);
    }
    const before = await snapshot(outside);
    const store = openWorkflowStore({ dataDir, watch: false, packThreshold: Number.POSITIVE_INFINITY });
    try {
      expect(await settledCode(() => store.writeTree(null, RID, "main", { files: { "notes/b.txt": "b" }, message: "loose" }))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(outside)).toEqual(before);
  });

  it("at the deployment's folder itself: every read and write is refused", async () => {
    const dataDir = await seededDataDir();
    const outside = join(await tempDir(), "elsewhere.git");
    await replaceByLink(gitdirOf(dataDir), outside);
    const before = await snapshot(outside);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => store.resolveRef(null, RID, "main"))).toBe("path_escapes_data_dir");
      expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(outside)).toEqual(before);
  });

  it("at a loose ref file: its value is not read from outside", async () => {
    const dataDir = await seededDataDir();
    const outside = join(await tempDir(), "main-elsewhere");
    await replaceByLink(join(gitdirOf(dataDir), "refs", "heads", "main"), outside);
    const before = await snapshot(join(outside, ".."));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => store.resolveRef(null, RID, "main"))).toBe("path_escapes_data_dir");
      expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(join(outside, ".."))).toEqual(before);
  });

  it("at a derived file: it reads as absent, and the next write replaces the link, not what it leads to", async () => {
    const dataDir = await seededDataDir();
    const derivedDir = join(gitdirOf(dataDir), "workflow-host");
    await mkdir(derivedDir, { recursive: true });
    const outsideDir = await tempDir();
    await writeFile(join(outsideDir, "index"), "not ours");
    await symlink(join(outsideDir, "index"), join(derivedDir, "index"));
    const before = await snapshot(outsideDir);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const derived = store as Required<Pick<RepoStore, "readDerived" | "writeDerived">>;
      expect(await derived.readDerived(null, RID, "index")).toBeNull();
      await derived.writeDerived(null, RID, "index", new Uint8Array([7]));
      expect([...((await derived.readDerived(null, RID, "index")) ?? [])]).toEqual([7]);
    } finally {
      await store.close();
    }
    expect((await lstat(join(derivedDir, "index"))).isSymbolicLink()).toBe(false);
    expect(await snapshot(outsideDir)).toEqual(before);
  });

  it("at the ref lock's owner record (a hint only): the commit goes on, the record is not written outside, and the link is removed", async () => {
    const dataDir = await seededDataDir();
    const record = join(gitdirOf(dataDir), "workflow-host", "ref-locks", "refs", "heads", "main.owner");
    // The record exists once a write took the lock.
    expect((await lstat(record)).isFile()).toBe(true);
    const outsideDir = await tempDir();
    await replaceByLink(record, join(outsideDir, "owner"));
    const before = [await snapshot(outsideDir), await readFile(join(outsideDir, "owner"), "utf8")];
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("succeeded");
    } finally {
      await store.close();
    }
    expect([await snapshot(outsideDir), await readFile(join(outsideDir, "owner"), "utf8")]).toEqual(before);
    expect((await lstat(record)).isSymbolicLink()).toBe(false);
  });

  it("refuses a folder swapped for an outside link after a store used it, at the next start", async () => {
    const dataDir = await seededDataDir();
    const gitdir = gitdirOf(dataDir);
    const first = openWorkflowStore({ dataDir, watch: false });
    await first.writeTree(null, RID, "refs/heads/team/a", { files: { "notes/a.txt": "a" }, message: "first" });
    await first.close();
    const outside = join(await tempDir(), "elsewhere");
    await replaceByLink(join(gitdir, "refs", "heads", "team"), outside);
    const before = await snapshot(outside);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => store.writeTree(null, RID, "refs/heads/team/b", { files: { "notes/b.txt": "b" }, message: "second" }))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(outside)).toEqual(before);
  });

  it("makes a used folder that went away again itself, inside the data dir", async () => {
    const dataDir = await seededDataDir();
    const gitdir = gitdirOf(dataDir);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await store.writeTree(null, RID, "refs/heads/team/a", { files: { "notes/a.txt": "a" }, message: "first" });
      await rm(join(gitdir, "refs", "heads", "team"), { recursive: true });
      await store.writeTree(null, RID, "refs/heads/team/b", { files: { "notes/b.txt": "b" }, message: "second" });
      expect((await lstat(join(gitdir, "refs", "heads", "team"))).isDirectory()).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe("a link inside a deployment that leads into another deployment's folder", () => {
  const OTHER = { kind: WORKFLOW_RUN_KIND, id: "dep-2" };
  /** dep-1 and dep-2, each with a run; dep-2's folder as a snapshot to compare. */
  /** A timer set in dep-1 is refused (path_escapes_data_dir), and `other` is left exactly as it was. */
  async function expectRefusedLeaving(dataDir: string, other: string): Promise<void> {
    const before = await snapshot(other);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(other)).toEqual(before);
  }

  async function twoDeployments(): Promise<{ dataDir: string; other: string }> {
    const dataDir = await seededDataDir();
    const store = openWorkflowStore({ dataDir, watch: false });
    await store.initRepo(null, OTHER);
    await store.writeTree(null, OTHER, "main", { files: { "notes/b.txt": "b" }, message: "b" });
    await store.close();
    return { dataDir, other: join(dataDir, "deployments", "dep-2.git") };
  }

  for (const [name, target] of [
    ["refs/heads", "../../dep-2.git/refs/heads"],
    ["refs", "../dep-2.git/refs"],
    ["objects", "../dep-2.git/objects"],
  ] as const) {
    for (const absolute of [false, true]) {
      it(`at ${name} (${absolute ? "absolute" : "relative"} link): the write is refused and the other deployment is left as it was`, async () => {
        const { dataDir, other } = await twoDeployments();
        const at = join(gitdirOf(dataDir), name);
        await rm(at, { recursive: true });
        await symlink(absolute ? join(at, "..", target) : target, at);
        const before = await snapshot(other);
        const store = openWorkflowStore({ dataDir, watch: false });
        try {
          expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("path_escapes_data_dir");
          // The other deployment itself is served as before.
          expect(await store.resolveRef(null, OTHER, "main")).toMatch(/^[0-9a-f]{40}$/);
        } finally {
          await store.close();
        }
        expect(await snapshot(other)).toEqual(before);
      });
    }
  }

  it("at the deployment's folder itself: a link to another deployment's folder is refused", async () => {
    const { dataDir, other } = await twoDeployments();
    await rm(gitdirOf(dataDir), { recursive: true });
    await symlink("dep-2.git", gitdirOf(dataDir));
    await expectRefusedLeaving(dataDir, other);
  });

  it("a chain that leaves the deployment and comes back into another is refused", async () => {
    const { dataDir, other } = await twoDeployments();
    const hop = join(dataDir, "hop");
    await symlink(join(other, "refs", "heads"), hop);
    const at = join(gitdirOf(dataDir), "refs", "heads");
    await rm(at, { recursive: true });
    await symlink("../../../hop", at);
    await expectRefusedLeaving(dataDir, other);
  });

  it("is reported by check", async () => {
    const { dataDir } = await twoDeployments();
    const at = join(gitdirOf(dataDir), "refs", "heads");
    await rm(at, { recursive: true });
    await symlink("../../dep-2.git/refs/heads", at);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const report = await checkDeployments(store);
      expect(report.problems.map((p) => [p.code, p.path])).toContainEqual(["path_escapes_data_dir", `deployments/${REPO}.git/refs/heads`]);
    } finally {
      await store.close();
    }
  });
});

describe("a link at a pack's place", () => {
  it("is not read by the store: reads of what it holds are refused", async () => {
    const dataDir = await seededDataDir();
    const packDir = join(gitdirOf(dataDir), "objects", "pack");
    const outsideDir = await tempDir();
    for (const name of await readdir(packDir)) if (name.endsWith(".pack")) await replaceByLink(join(packDir, name), join(outsideDir, name));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => store.resolveRef(null, RID, "main"))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
  });

  it("with its index linked too: nothing of it is read, by the store or by the fallback reader", async () => {
    const dataDir = await seededDataDir();
    const packDir = join(gitdirOf(dataDir), "objects", "pack");
    const outsideDir = await tempDir();
    for (const name of await readdir(packDir)) if (/\.(pack|idx|rev)$/.test(name)) await replaceByLink(join(packDir, name), join(outsideDir, name));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const reads = await store.openCommittedReads(null, RID, "main").catch((error: unknown) => error as Error);
      const listed = reads instanceof Error ? reads : await reads.listDir("runs/r1/events").catch((error: unknown) => error as Error);
      expect(listed).toBeInstanceOf(Error);
    } finally {
      await store.close();
    }
  });

  it("is not read by the merge thread", async () => {
    const dataDir = await tempDir();
    const store = openWorkflowStore({ dataDir, watch: false, packThreshold: 1 });
    await store.initRepo(null, RID);
    for (const timerId of ["t1", "t2", "t3"]) await setTimer(store, "r1", timerId);
    await store.close();
    const packDir = join(gitdirOf(dataDir), "objects", "pack");
    const names = (await readdir(packDir)).filter((name) => name.endsWith(".pack")).map((name) => name.slice(0, -5));
    expect(names.length).toBeGreaterThan(1);
    const outsideDir = await tempDir();
    await replaceByLink(join(packDir, `${names[0] as string}.pack`), join(outsideDir, "linked.pack"));
    const sources = await Promise.all(names.map(async (name) => ({ name, size: (await stat(join(packDir, `${name}.pack`))).size })));
    await expect(mergeOnThread({ packDir, sources, known: [] })).rejects.toThrow();
  });
});

describe("workflow-host check", () => {
  it("reports each link leading outside the data dir once, with path_escapes_data_dir, and a link that stays inside its repository not at all", async () => {
    const dataDir = await seededDataDir();
    const gitdir = gitdirOf(dataDir);
    const outside = await tempDir();
    // One the reads of check never pass through, one they do, one that stays inside.
    await mkdir(join(gitdir, "refs", "consumers"));
    await replaceByLink(join(gitdir, "refs", "consumers"), join(outside, "consumers"));
    await replaceByLink(join(gitdir, "objects", "pack"), join(outside, "pack"));
    await mkdir(join(gitdir, "spare"));
    await symlink(join(gitdir, "spare"), join(gitdir, "workflow-host-spare"));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const report = await checkDeployments(store);
      expect(report.problems.map((p) => [p.code, p.path]).sort()).toEqual([
        ["path_escapes_data_dir", `deployments/${REPO}.git/objects/pack`],
        ["path_escapes_data_dir", `deployments/${REPO}.git/refs/consumers`],
      ]);
    } finally {
      await store.close();
    }
  });

  it("reports a deployment folder that is itself a link leading outside", async () => {
    const dataDir = await seededDataDir();
    await replaceByLink(gitdirOf(dataDir), join(await tempDir(), "elsewhere.git"));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      const report = await checkDeployments(store);
      expect(report.problems.map((p) => [p.code, p.path])).toEqual([["path_escapes_data_dir", `deployments/${REPO}.git`]]);
    } finally {
      await store.close();
    }
  });
});

describe("links the store follows", () => {
  it("works as before without links, making nested ref folders itself", async () => {
    const dataDir = await seededDataDir();
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await setTimer(store, "r2", "t2");
      await store.writeTree(null, RID, "refs/heads/team/deep/a", { files: { "notes/a.txt": "a" }, message: "nested" });
      expect(await store.resolveRef(null, RID, "refs/heads/team/deep/a")).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      await store.close();
    }
  });

  it("follows a data dir root that is itself a link", async () => {
    const real = await seededDataDir();
    const dataDir = join(await tempDir(), "data-link");
    await symlink(real, dataDir);
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await setTimer(store, "r2", "t2");
      expect(await store.resolveRef(null, RID, "main")).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      await store.close();
    }
  });

  it("refuses a folder link that stays inside the data dir but leaves the repository", async () => {
    const dataDir = await seededDataDir();
    const gitdir = gitdirOf(dataDir);
    const elsewhere = join(dataDir, "spare-disk", "pack");
    await mkdir(join(dataDir, "spare-disk"));
    await rename(join(gitdir, "objects", "pack"), elsewhere);
    await symlink(elsewhere, join(gitdir, "objects", "pack"));
    const before = await snapshot(join(dataDir, "spare-disk"));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      expect(await settledCode(() => setTimer(store, "r2", "t2"))).toBe("path_escapes_data_dir");
    } finally {
      await store.close();
    }
    expect(await snapshot(join(dataDir, "spare-disk"))).toEqual(before);
  });

  it("follows a folder link whose target stays inside the repository", async () => {
    const dataDir = await seededDataDir();
    const gitdir = gitdirOf(dataDir);
    const inside = join(gitdir, "spare-disk", "pack");
    await mkdir(join(gitdir, "spare-disk"));
    await rename(join(gitdir, "objects", "pack"), inside);
    await symlink(inside, join(gitdir, "objects", "pack"));
    const store = openWorkflowStore({ dataDir, watch: false });
    try {
      await setTimer(store, "r2", "t2");
      expect(await store.resolveRef(null, RID, "main")).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      await store.close();
    }
    expect((await readdir(inside)).some((name) => name.endsWith(".pack"))).toBe(true);
  });
});
