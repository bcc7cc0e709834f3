/**
 * The fire commit's write path against the real git: a pack's index is byte for byte the one
 * `git index-pack` makes of the same pack (0 objects, 1, many, big folders stored in pieces);
 * event files written again with bytes already packed (a copy in another pack) read back right
 * through merges, `git gc` and `git fsck --strict`, and `check` finds nothing wrong.
 */
import { copyFile, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { hashObject, type GitObject } from "../../../src/substrate/git-object.js";
import { encodePack, encodePackGently, packParts } from "../../../src/substrate/pack-file.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitAt, runGit } from "../../helpers/git-cli.js";
import { seededRandom } from "../../helpers/seeded-random.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-burst-");

async function gitIndexOf(dir: string, name: string, pack: Buffer): Promise<Buffer> {
  const packPath = join(dir, `${name}.pack`);
  await writeFile(packPath, pack);
  const out = join(dir, `${name}.git.idx`);
  const result = await runGit(["index-pack", "-o", out, packPath]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return readFile(out);
}

function objectsOf(seed: number, count: number): GitObject[] {
  const r = seededRandom(seed);
  const out: GitObject[] = [];
  for (let i = 0; i < count; i++) {
    const big = r() < 0.01;
    const content = Buffer.alloc(big ? 70_000 + Math.floor(r() * 1000) : 16 + Math.floor(r() * 200));
    for (let k = 0; k < content.length; k++) content[k] = Math.floor(r() * 256);
    content.write(`${seed}-${i}`, 0, "latin1");
    out.push(hashObject("blob", content));
  }
  return out;
}

describe("a pack's index", () => {
  it("is byte for byte git index-pack's, for 0, 1 and many objects, sync and sliced", async () => {
    const dir = await tempDir();
    for (const [seed, count] of [[1, 0], [2, 1], [3, 2], [4, 257], [5, 5_000]] as const) {
      const objects = objectsOf(seed, count);
      const sync = encodePack(objects);
      const sliced = await encodePackGently(objects, () => Promise.resolve());
      const bytes = Buffer.concat(packParts(sync).map((p) => Buffer.from(p)));
      const expected = await gitIndexOf(dir, `p${seed}`, bytes);
      expect(Buffer.compare(sync.idx, expected), `sync ${count}`).toBe(0);
      expect(Buffer.compare(sliced.idx, expected), `sliced ${count}`).toBe(0);
      expect(sync.count).toBe(count);
    }
  });
});

const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };

describe("event files whose bytes are already packed", () => {
  it.each([1, 1_000_000])("are written again (pack threshold %i) and read back right through merges, git gc and fsck", async (packThreshold) => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    const seed: Record<string, string> = {};
    for (let i = 0; i < 40; i++) seed[`runs/r${String(i).padStart(3, "0")}/events/1.json`] = `{"seq":1,"same":true}`;
    await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
    // Every commit appends the same bytes to a few runs: the blob is in every commit's pack.
    const same = Buffer.from(`{"seq":2,"type":"TimerFired","same":true}`);
    for (let k = 0; k < 12; k++) {
      const runs = [k, k + 13, k + 26].map((i) => `runs/r${String(i).padStart(3, "0")}`);
      await store.writeTreeDelta(null, REPO, "main", {
        message: `append ${k}`,
        prevalidated: true,
        computeDelta: () => Promise.resolve({ appends: runs.map((folder) => ({ folder, sub: "events", files: [{ name: "2.json", content: same }] })) }),
      });
    }
    const blob = hashObject("blob", same).oid;
    const holders = async (): Promise<number> => {
      let holding = 0;
      for (const idx of (await readdir(join(gitdir, "objects", "pack"))).filter((n) => n.endsWith(".idx"))) {
        const verified = await runGit(["verify-pack", "-v", join(gitdir, "objects", "pack", idx)]);
        expect(verified.code, idx).toBe(0);
        if (verified.stdout.includes(blob)) holding++;
      }
      return holding;
    };
    const readBack = async (reads: { readBlob(path: string): Promise<Uint8Array | null> }): Promise<void> => {
      for (const i of [0, 11, 13, 24, 26, 37]) expect(Buffer.from((await reads.readBlob(`runs/r${String(i).padStart(3, "0")}/events/2.json`)) ?? []).toString()).toBe(same.toString());
    };
    const tip = (await store.resolveRef(null, REPO, "main")) as string;
    await readBack(await store.openCommittedReads(null, REPO, tip));
    await expectFsckClean(gitdir);
    // Packed: one copy per commit's pack; a merge of them all keeps one.
    if (packThreshold === 1) expect(await holders()).toBe(12);
    await store.compactPacks?.(null, REPO);
    if (packThreshold === 1) expect(await holders()).toBe(1);
    await readBack(await store.openCommittedReads(null, REPO, tip));
    await store.close();
    await expectFsckClean(gitdir);
    expect((await gitAt(gitdir, ["cat-file", "-p", blob])).trim()).toBe(same.toString());
    // A fresh store reads the same, and so does git after gc.
    const again = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold, clock: () => new Date("2026-01-01T00:00:00Z") });
    await readBack(await again.openCommittedReads(null, REPO, tip));
    await again.close();
    expect((await runGit([`--git-dir=${gitdir}`, "gc", "--quiet"])).code).toBe(0);
    await expectFsckClean(gitdir);
    expect((await gitAt(gitdir, ["show", "main:runs/r011/events/2.json"])).trim()).toBe(same.toString());
    const after = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold, clock: () => new Date("2026-01-01T00:00:00Z") });
    await readBack(await after.openCommittedReads(null, REPO, tip));
    await after.close();
  });
});

describe("a burst's packs", () => {
  it("each have the index git index-pack writes: a commit appending to every run, to runs at the ends, and after a merge", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const open = () => createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    const store = open();
    await store.initRepo(null, REPO);
    const RUNS = 3_000;
    const runId = (i: number): string => `r${String(i).padStart(5, "0")}`;
    const files: Record<string, string> = {};
    for (let i = 0; i < RUNS; i++) files[`runs/${runId(i)}/events/1.json`] = `{"seq":1,"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files, message: "seed" });
    const append = (runs: readonly number[], seq: number) =>
      store.writeTreeDelta(null, REPO, "main", {
        message: `append ${seq}`,
        prevalidated: true,
        computeDelta: () => Promise.resolve({ appends: runs.map((i) => ({ folder: `runs/${runId(i)}`, sub: "events", files: [{ name: `${seq}.json`, content: Buffer.from(`{"seq":${seq},"i":${i % 7}}`) }] })) }),
      });
    // Every run (the folder's CRC-32 read again), then runs at its ends (patched), then every run again.
    await append(Array.from({ length: RUNS }, (_, i) => i), 2);
    await append([0, 1, RUNS - 1], 3);
    await append(Array.from({ length: RUNS }, (_, i) => RUNS - 1 - i), 4);
    await append([RUNS - 1], 5);
    const packDir = join(gitdir, "objects", "pack");
    const scratch = await tempDir();
    const checkPacks = async (): Promise<number> => {
      const packs = (await readdir(packDir)).filter((f) => f.endsWith(".pack"));
      for (const [k, pack] of packs.entries()) {
        const name = pack.slice(0, -5);
        await copyFile(join(packDir, pack), join(scratch, `c${k}.pack`));
        const ours = await readFile(join(packDir, `${name}.idx`));
        const theirs = await gitIndexOf(scratch, `c${k}`, await readFile(join(scratch, `c${k}.pack`)));
        expect(ours.equals(theirs), name).toBe(true);
      }
      return packs.length;
    };
    expect(await checkPacks()).toBeGreaterThanOrEqual(4);
    await store.compactPacks?.(null, REPO);
    await store.close();
    await checkPacks();
    await expectFsckClean(gitdir);
    expect((await gitAt(gitdir, ["show", `main:runs/${runId(RUNS - 1)}/events/5.json`])).trim()).toBe(`{"seq":5,"i":${(RUNS - 1) % 7}}`);
  });
});
