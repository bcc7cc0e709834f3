import { describe, expect, it } from "vitest";
import { appendNext } from "../../helpers/append-merge.js";
import { createMemStore, GITDIR, looseObjects, REPO } from "../../helpers/memfs-repo-store.js";

async function errorOf(promise: Promise<unknown>): Promise<{ code?: string; data?: Record<string, unknown> } | undefined> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; data?: Record<string, unknown> };
  }
  return undefined;
}

const CASES: [string, (tip: string) => string][] = [
  ["truncated to 0 bytes (F2b)", () => ""],
  ["truncated mid-oid", (tip) => tip.slice(0, 17)],
  ["missing its newline", (tip) => tip],
  ["not hex", () => `${"z".repeat(40)}\n`],
  ["dangling (valid oid, no such object)", () => `${"0123456789abcdef0123456789abcdef01234567"}\n`],
];

describe("a torn or dangling ref is ref_corrupt, never an empty repository", () => {
  it.each(CASES)("refs/heads/main %s", async (_label, corrupt) => {
    const { store, fs } = createMemStore();
    const { commitSha } = await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "seed" });
    const tip = (await store.resolveRef(null, REPO, "main")) as string;
    const value = corrupt(tip);
    fs.writeFileSync(`${GITDIR}/refs/heads/main`, value);
    const before = looseObjects(fs);
    let merges = 0;

    const attempts: (() => Promise<unknown>)[] = [
      () => store.resolveRef(null, REPO, "main"),
      () => store.resolveRef(null, REPO, "HEAD"),
      () => store.openCommittedReads(null, REPO, "main"),
      () => store.initRepo(null, REPO),
      () => store.writeTree(null, REPO, "main", { files: { x: "1" }, message: "m" }),
      () => store.writeTreePreservingPrefix(null, REPO, "main", { ...appendNext("r1", () => ({})), merge: (e) => (merges++, { files: e }) }),
      () => store.writeTreeDelta(null, REPO, "main", { message: "m", computeDelta: () => (merges++, { puts: { y: "1" } }) }),
      () => store.subscribe(null, REPO, "main", { from: commitSha })[Symbol.asyncIterator]().next(),
    ];
    for (const attempt of attempts) {
      const error = await errorOf(attempt());
      expect(error?.code).toBe("ref_corrupt");
      expect(error?.data?.ref).toBe("refs/heads/main");
      // The value found is named (the raw bytes of a torn file, the oid of a dangling ref).
      expect(String(error?.data?.value).trim()).toBe(value.trim());
    }
    expect(merges).toBe(0);
    expect(fs.readFileSync(`${GITDIR}/refs/heads/main`, "utf8")).toBe(value);
    expect(fs.existsSync(`${GITDIR}/refs/heads/main.lock`)).toBe(false);
    expect(looseObjects(fs)).toEqual(before);
  });

  it("reports a tip commit in a torn pack as object_corrupt, not as a dangling ref", async () => {
    const { store, fs } = createMemStore({ packThreshold: 1 });
    await store.initRepo(null, REPO);
    const { commitSha } = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "seed" });
    await store.close();
    const packDir = `${GITDIR}/objects/pack`;
    const packs = (fs.readdirSync(packDir) as string[]).filter((name) => name.endsWith(".pack"));
    // Each commit is one pack here; the newest one holds the tip commit. Tear them all.
    for (const name of packs) {
      const bytes = fs.readFileSync(`${packDir}/${name}`) as Buffer;
      fs.writeFileSync(`${packDir}/${name}`, bytes.subarray(0, bytes.length - 30));
    }
    const { store: fresh } = createMemStore({ fs });
    for (const attempt of [() => fresh.resolveRef(null, REPO, "main"), () => fresh.openCommittedReads(null, REPO, "main")]) {
      const error = await errorOf(attempt());
      expect(error?.code).toBe("object_corrupt");
      expect(String((error as Error).message)).toMatch(/pack-[0-9a-f]{40} is corrupt|cannot be read|is damaged: its entry in pack pack-[0-9a-f]{40}/);
    }
    // A commit that is simply not there is still a dangling ref.
    for (const name of packs) fs.unlinkSync(`${packDir}/${name.replace(/\.pack$/, ".idx")}`);
    const { store: other } = createMemStore({ fs });
    const missing = await errorOf(other.resolveRef(null, REPO, "main"));
    expect(missing?.code).toBe("ref_corrupt");
    expect(missing?.data?.value).toBe(commitSha);
    await Promise.all([fresh.close(), other.close()]);
  });

  it("reports a torn loose object as object_corrupt naming its oid", async () => {
    const { store, fs } = createMemStore();
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "a.json": "{\"x\":1}" }, message: "seed" });
    const reads = await store.openCommittedReads(null, REPO, "main");
    const oid = (await reads.listDir(""))[0]?.oid as string;
    const path = `${GITDIR}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`;
    const bytes = fs.readFileSync(path) as Buffer;
    fs.writeFileSync(path, bytes.subarray(0, bytes.length - 3));
    const { store: fresh } = createMemStore({ fs });
    const error = await errorOf((await fresh.openCommittedReads(null, REPO, "main")).readBlob("a.json"));
    expect(error?.code).toBe("object_corrupt");
    expect(error?.data?.oid).toBe(oid);
  });
});

describe("a damaged HEAD", () => {
  it("leaves a missing ref outside refs/heads/ missing (null), never ref_corrupt: HEAD only ever names a branch", async () => {
    const { store, fs } = createMemStore();
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "seed" });
    fs.writeFileSync(`${GITDIR}/HEAD`, "garbage\n");
    expect(await store.resolveRef(null, REPO, "refs/archive/runs")).toBeNull();
    expect((await store.openCommittedReads(null, REPO, "refs/archive/runs")).commitSha).toBeNull();
    // The main line is still guarded: a missing refs/heads/main is not an empty repository.
    fs.unlinkSync(`${GITDIR}/refs/heads/main`);
    expect((await errorOf(store.resolveRef(null, REPO, "main")))?.code).toBe("ref_corrupt");
  });
});
