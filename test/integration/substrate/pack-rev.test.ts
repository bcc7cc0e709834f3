/**
 * Reverse indexes (`pack-*.rev`, git's RIDX format) beside big packs: written beside merged
 * packs byte for byte as git writes them, ignored and replaced when damaged, written for a big
 * pack git left without one; plain git keeps reading the repository.
 */
import { execFile } from "node:child_process";
import { copyFile, lstat, mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId, RepoStore } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-pack-rev-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const RUNS = 1_500;

const openStore = (dataDir: string): RepoStore =>
  createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });

/** A deployment whose packs were merged into one of more than 4,096 objects. */
async function mergedDeployment(): Promise<{ dataDir: string; gitdir: string; packDir: string }> {
  const dataDir = await tempDir();
  const gitdir = join(dataDir, "deployments", "dep-1.git");
  const store = openStore(dataDir);
  await store.initRepo(null, REPO);
  for (const part of [0, 1]) {
    const files: Record<string, string> = {};
    for (let i = 0; i < RUNS; i++) files[`runs/r${part}-${String(i).padStart(5, "0")}/events/1.json`] = `{"seq":1,"part":${part},"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files, message: `seed ${part}` });
  }
  for (let k = 0; k < 5; k++) await store.writeTree(null, REPO, "main", { files: { [`runs/r0-${String(k).padStart(5, "0")}/events/2.json`]: `{"seq":2}` }, message: `append ${k}` });
  await store.compactPacks?.(null, REPO);
  await store.close();
  return { dataDir, gitdir, packDir: join(gitdir, "objects", "pack") };
}

/** What `git index-pack --rev-index` writes for the pack `name` in `packDir`. */
async function gitsReverseIndex(packDir: string, name: string): Promise<Buffer> {
  const scratch = join(await tempDir(), "rev");
  await mkdir(scratch, { recursive: true });
  await copyFile(join(packDir, `${name}.pack`), join(scratch, "x.pack"));
  await git(["index-pack", "--rev-index", join(scratch, "x.pack")]);
  return readFile(join(scratch, "x.rev"));
}

const revNames = async (packDir: string): Promise<string[]> => (await readdir(packDir)).filter((f) => f.endsWith(".rev")).map((f) => f.slice(0, -4));

/** Reads every run's first event through a fresh store (many entries of the big pack). */
async function readAll(dataDir: string): Promise<void> {
  const store = openStore(dataDir);
  const reads = await store.openCommittedReads(null, REPO, "main");
  for (let i = 0; i < RUNS; i += 37) {
    const bytes = await reads.readBlob(`runs/r1-${String(i).padStart(5, "0")}/events/1.json`);
    expect(Buffer.from(bytes as Uint8Array).toString()).toBe(`{"seq":1,"part":1,"i":${i}}`);
  }
  expect(await reads.listDir("runs")).toHaveLength(2 * RUNS);
  await store.close();
}

describe("reverse indexes beside big packs", () => {
  it("are written beside a merged pack exactly as git index-pack --rev-index writes them; git reads the repo", async () => {
    const { gitdir, packDir } = await mergedDeployment();
    const revs = await revNames(packDir);
    expect(revs.length).toBeGreaterThanOrEqual(1);
    const files = new Set(await readdir(packDir));
    for (const name of revs) {
      expect(files.has(`${name}.idx`) && files.has(`${name}.pack`)).toBe(true);
      expect((await readFile(join(packDir, `${name}.rev`))).equals(await gitsReverseIndex(packDir, name))).toBe(true);
      await gitAt(gitdir, ["verify-pack", join(packDir, `${name}.idx`)]);
    }
    await expectFsckClean(gitdir);
  });

  it("a damaged or truncated one is ignored and replaced, never fatal", async () => {
    const { dataDir, gitdir, packDir } = await mergedDeployment();
    const [name] = await revNames(packDir);
    expect(name).toBeDefined();
    const path = join(packDir, `${name as string}.rev`);
    const good = await readFile(path);
    // A position in the table changed (the file's checksum no longer matches).
    const flipped = Buffer.from(good);
    flipped[12 + 4 * 7 + 3] = (flipped[12 + 4 * 7 + 3] as number) ^ 0x01;
    // The same, its checksum made right again: only the table's order gives it away.
    const resigned = Buffer.from(flipped);
    const { createHash } = await import("node:crypto");
    createHash("sha1").update(resigned.subarray(0, resigned.length - 20)).digest().copy(resigned, resigned.length - 20);
    for (const damaged of [flipped, resigned, good.subarray(0, 10), Buffer.alloc(0)]) {
      await writeFile(path, damaged);
      await readAll(dataDir);
      expect((await readFile(path)).equals(good)).toBe(true);
    }
    await expectFsckClean(gitdir);
  });

  it("a big pack git wrote without one gets one once a reader sorted its entries", async () => {
    const { dataDir, gitdir, packDir } = await mergedDeployment();
    await gitAt(gitdir, ["-c", "pack.writeReverseIndex=false", "repack", "-a", "-d", "-q"]);
    expect(await revNames(packDir)).toEqual([]);
    await readAll(dataDir);
    const revs = await revNames(packDir);
    expect(revs).toHaveLength(1);
    expect((await readFile(join(packDir, `${revs[0] as string}.rev`))).equals(await gitsReverseIndex(packDir, revs[0] as string))).toBe(true);
    await expectFsckClean(gitdir);
  });

  it("a folder, a FIFO or a symlink pointing outside at its name is never fatal, and nothing outside the data dir is written", async () => {
    const { dataDir, gitdir, packDir } = await mergedDeployment();
    const [name] = await revNames(packDir);
    const path = join(packDir, `${name as string}.rev`);
    const good = await readFile(path);
    const outside = join(await tempDir(), "outside.rev");
    await writeFile(outside, "not a reverse index");
    // A folder: cannot be replaced, the reads go on without it.
    await rm(path);
    await mkdir(join(path, "inner"), { recursive: true });
    await readAll(dataDir);
    expect((await lstat(path)).isDirectory()).toBe(true);
    await rm(path, { recursive: true });
    // A FIFO nobody writes: not opened to wait, replaced.
    await promisify(execFile)("mkfifo", [path]);
    await readAll(dataDir);
    expect((await readFile(path)).equals(good)).toBe(true);
    // A symlink to a file outside: the link is replaced, the file it pointed at is untouched.
    await rm(path);
    await symlink(outside, path);
    await readAll(dataDir);
    expect((await lstat(path)).isSymbolicLink()).toBe(false);
    expect((await readFile(path)).equals(good)).toBe(true);
    expect((await readFile(outside)).toString()).toBe("not a reverse index");
    expect((await readdir(join(gitdir, "objects"))).filter((f) => f.startsWith("tmp_"))).toEqual([]);
    await expectFsckClean(gitdir);
  });

  it("two readers writing the same missing one at once leave one correct file and no temp files", async () => {
    const { dataDir, gitdir, packDir } = await mergedDeployment();
    const [name] = await revNames(packDir);
    const path = join(packDir, `${name as string}.rev`);
    const good = await readFile(path);
    for (let round = 0; round < 3; round++) {
      await rm(path);
      await Promise.all([readAll(dataDir), readAll(dataDir), readAll(dataDir)]);
      expect((await readFile(path)).equals(good)).toBe(true);
    }
    expect((await readdir(join(gitdir, "objects"))).filter((f) => f.startsWith("tmp_"))).toEqual([]);
    await gitAt(gitdir, ["verify-pack", join(packDir, `${name as string}.idx`)]);
    await expectFsckClean(gitdir);
  });

  it("git gc and git repack run beside an open store: it keeps reading, and no .rev is left without its pack", async () => {
    const { dataDir, gitdir, packDir } = await mergedDeployment();
    const store = openStore(dataDir);
    const readSome = async (): Promise<void> => {
      const reads = await store.openCommittedReads(null, REPO, "main");
      for (let i = 0; i < RUNS; i += 101) {
        const bytes = await reads.readBlob(`runs/r1-${String(i).padStart(5, "0")}/events/1.json`);
        expect(Buffer.from(bytes as Uint8Array).toString()).toBe(`{"seq":1,"part":1,"i":${i}}`);
      }
    };
    try {
      await readSome();
      for (const args of [
        ["-c", "pack.writeReverseIndex=true", "repack", "-a", "-d", "-q"],
        ["-c", "pack.writeReverseIndex=false", "repack", "-a", "-d", "-f", "-q"],
        ["gc", "-q", "--prune=now"],
      ]) {
        await gitAt(gitdir, args);
        await readSome();
        await store.writeTree(null, REPO, "main", { files: { [`runs/r0-00000/events/${args.length}.json`]: "{}" }, message: args.join(" ") });
        await readSome();
      }
    } finally {
      await store.close();
    }
    const files = new Set(await readdir(packDir));
    for (const name of await revNames(packDir)) expect(files.has(`${name}.idx`) && files.has(`${name}.pack`), name).toBe(true);
    await readAll(dataDir);
    await expectFsckClean(gitdir);
  });
});
