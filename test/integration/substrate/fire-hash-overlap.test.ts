/**
 * Fire commits on a deployment whose `runs/` folder is big enough (≥ 1 MiB, BESIDE_MIN_BYTES) for its oid to be
 * hashed on the hasher thread while the pack's trailer hash is started beside it (design notes
 * §81): the packs must be what git expects (`git verify-pack -v`, `git fsck --strict --full`),
 * every commit's `runs/` oid the one `git mktree` computes from its entries, across many commits,
 * sliced and unsliced encodings, and a pack merge in between.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { packPrefixesUsed } from "../../../src/substrate/pack-file.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import { treeHasherReady, treeOidsHashedBeside } from "../../../src/substrate/tree-hasher.js";
import { BESIDE_MIN_BYTES } from "../../../src/substrate/tree-object.js";
import type { FolderAppend, RepoId, RepoStore } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { git, gitAt, runGit } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-hash-overlap-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
/** 4,600 runs of 220-character ids: a `runs/` folder of 4,600 × 247 bytes, 1.08 MiB. */
const RUNS = 4_600;
const runId = (i: number): string => `run-${String(i).padStart(6, "0")}-${"x".repeat(209)}`;
/** The same runs with 32-character ids: 4,600 × 59 bytes, 265 KiB, below BESIDE_MIN_BYTES. */
const smallRunId = (i: number): string => `run-${String(i).padStart(6, "0")}-${"x".repeat(21)}`;

function fireAppends(round: number, idOf: (i: number) => string = runId): FolderAppend[] {
  const seq = round + 1;
  // Runs spread over the folder, a different set each round (some fired twice over the rounds).
  return Array.from({ length: 40 }, (_, k) => (k * 113 + round * 7) % RUNS)
    .sort((a, b) => a - b)
    .map((i) => ({ folder: `runs/${idOf(i)}`, sub: "events", files: [{ name: `${seq}-${round}.json`, content: Buffer.from(`{"seq":${seq},"round":${round},"run":${i},"type":"TimerFired"}`) }] }));
}

/** `count` run ids made by `idOf`, from 0. */
const idsOf = (idOf: (i: number) => string, count = RUNS): string[] => Array.from({ length: count }, (_, i) => idOf(i));

/** A store over a new data dir whose deployment holds the runs `ids`, one event each. */
async function seededStore(ids: readonly string[]): Promise<{ store: RepoStore; gitdir: string }> {
  const dataDir = await tempDir();
  const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
  await store.initRepo(null, REPO);
  const files: Record<string, string> = {};
  ids.forEach((id, i) => {
    files[`runs/${id}/events/1.json`] = `{"seq":1,"run":${i}}`;
  });
  await store.writeTree(null, REPO, "main", { files, message: "seed" });
  return { store, gitdir: join(dataDir, "deployments", "dep-1.git") };
}

describe("fire commits on a big runs/ folder, its oid hashed beside the pack's trailer", () => {
  it("write packs git verifies and runs/ oids git computes, over many commits and a pack merge", async () => {
    expect(await treeHasherReady()).toBe(true);
    const { store, gitdir } = await seededStore(idsOf(runId));
    const hashed = treeOidsHashedBeside();
    const prefixed = packPrefixesUsed();
    const ROUNDS = 8;
    for (let round = 1; round <= ROUNDS; round++) {
      // Every other round sliced (the encoder's gentle path), as the scheduler's commits are.
      const pause = round % 2 === 0 ? { pause: () => new Promise<void>((resolve) => setImmediate(resolve)) } : {};
      const result = await store.writeTreeDelta(null, REPO, "main", { message: `fire ${round}`, prevalidated: true, ...pause, computeDelta: () => Promise.resolve({ appends: fireAppends(round) }) });
      expect(result.committed).toBe(true);
      // A merge of the packs so far in the middle: the later commits splice from merged packs.
      if (round === ROUNDS / 2) await store.compactPacks?.(null, REPO);
    }
    // Each fire commit's runs/ oid came from the hasher thread, its pack's trailer from the prefix.
    expect(treeOidsHashedBeside() - hashed).toBe(ROUNDS);
    expect(packPrefixesUsed() - prefixed).toBe(ROUNDS);
    await store.close();

    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
    expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
    const packDir = join(gitdir, "objects", "pack");
    const idxs = (await readdir(packDir)).filter((n) => n.endsWith(".idx"));
    expect(idxs.length).toBeGreaterThan(0);
    for (const idx of idxs) {
      const verified = await runGit(["verify-pack", "-v", join(packDir, idx)]);
      expect({ code: verified.code, stderr: verified.stderr }, idx).toEqual({ code: 0, stderr: "" });
    }
    const commits = (await gitAt(gitdir, ["rev-list", "main"])).split("\n").filter(Boolean);
    // The fire commits, the seed and what initRepo wrote before it.
    expect(commits.length).toBeGreaterThan(ROUNDS);
    for (const sha of commits.slice(0, ROUNDS)) {
      const runs = (await gitAt(gitdir, ["rev-parse", `${sha}:runs`])).trim();
      const listed = await gitAt(gitdir, ["ls-tree", `${sha}:runs`]);
      expect(listed.split("\n").filter(Boolean)).toHaveLength(RUNS);
      const made = (await git([`--git-dir=${gitdir}`, "mktree", "--missing"], { input: `${listed.trimEnd()}\n` })).trim();
      expect(made, sha).toBe(runs);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      const first = fireAppends(round)[0] as FolderAppend;
      const file = first.files[0] as { name: string; content: Uint8Array };
      expect((await gitAt(gitdir, ["show", `main:${first.folder}/events/${file.name}`])).trim()).toBe(Buffer.from(file.content).toString());
    }
  }, 120_000);

  it("hashes a runs/ folder below BESIDE_MIN_BYTES on the committing thread: the hand-over costs more than the hash", async () => {
    expect(BESIDE_MIN_BYTES).toBeGreaterThan(RUNS * (27 + smallRunId(0).length));
    expect(await treeHasherReady()).toBe(true);
    const { store, gitdir } = await seededStore(idsOf(smallRunId));
    const hashed = treeOidsHashedBeside();
    const ROUNDS = 3;
    for (let round = 1; round <= ROUNDS; round++) {
      const result = await store.writeTreeDelta(null, REPO, "main", { message: `fire ${round}`, prevalidated: true, computeDelta: () => Promise.resolve({ appends: fireAppends(round, smallRunId) }) });
      expect(result.committed).toBe(true);
    }
    expect(treeOidsHashedBeside() - hashed).toBe(0);
    await store.close();
    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
    expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
    const tip = (await gitAt(gitdir, ["rev-parse", "main:runs"])).trim();
    const listed = await gitAt(gitdir, ["ls-tree", "main:runs"]);
    expect((await git([`--git-dir=${gitdir}`, "mktree", "--missing"], { input: `${listed.trimEnd()}\n` })).trim()).toBe(tip);
  }, 60_000);

  it("hashes a runs/ folder of BESIDE_MIN_BYTES - 1 bytes on the committing thread and one of exactly BESIDE_MIN_BYTES beside the trailer", async () => {
    expect(await treeHasherReady()).toBe(true);
    // A folder entry is "40000 <name>\0" and a 20-byte oid: 27 bytes and the name.
    const full = Math.floor((BESIDE_MIN_BYTES - 1) / (27 + runId(0).length));
    const rest = BESIDE_MIN_BYTES - 1 - full * (27 + runId(0).length);
    const shortId = (length: number): string => `z-${"z".repeat(length - 2)}`;
    expect(rest - 27).toBeGreaterThanOrEqual(3);
    const { store, gitdir } = await seededStore([...idsOf(runId, full), shortId(rest - 27)]);
    const fire = async (round: number): Promise<{ beside: number; prefixes: number }> => {
      const hashed = treeOidsHashedBeside();
      const prefixed = packPrefixesUsed();
      const appends = fireAppends(round).filter((a) => Number(a.folder.slice(9, 15)) < full);
      const result = await store.writeTreeDelta(null, REPO, "main", { message: `fire ${round}`, prevalidated: true, computeDelta: () => Promise.resolve({ appends }) });
      expect(result.committed).toBe(true);
      return { beside: treeOidsHashedBeside() - hashed, prefixes: packPrefixesUsed() - prefixed };
    };
    const check = async (size: number): Promise<void> => {
      const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--strict", "--full", "--no-dangling"]);
      expect({ code: fsck.code, stdout: fsck.stdout, stderr: fsck.stderr }).toEqual({ code: 0, stdout: "", stderr: "" });
      const runs = (await gitAt(gitdir, ["rev-parse", "main:runs"])).trim();
      expect(Number((await gitAt(gitdir, ["cat-file", "-s", runs])).trim())).toBe(size);
      const listed = await gitAt(gitdir, ["ls-tree", "main:runs"]);
      expect((await git([`--git-dir=${gitdir}`, "mktree", "--missing"], { input: `${listed.trimEnd()}\n` })).trim()).toBe(runs);
    };
    expect(await fire(1)).toEqual({ beside: 0, prefixes: 0 });
    await check(BESIDE_MIN_BYTES - 1);
    // The short run renamed one character longer: the folder is exactly BESIDE_MIN_BYTES.
    await store.writeTreeDelta(null, REPO, "main", { message: "rename", computeDelta: () => Promise.resolve({ deletes: [`runs/${shortId(rest - 27)}`], puts: { [`runs/${shortId(rest - 26)}/events/1.json`]: `{"seq":1}` } }) });
    await check(BESIDE_MIN_BYTES);
    expect(await fire(2)).toEqual({ beside: 1, prefixes: 1 });
    await check(BESIDE_MIN_BYTES);
    await store.close();
  }, 60_000);
});
