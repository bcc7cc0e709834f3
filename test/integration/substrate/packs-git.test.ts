import * as nodeFs from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import * as isogit from "isomorphic-git";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean, expectLinearHistory } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-packs-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };

describe("pack files on disk", () => {
  it("writes packs, merges them with deltas, and git and isomorphic-git read every object", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    const seed: Record<string, string> = {};
    for (let i = 0; i < 1_000; i++) seed[`runs/r${String(i).padStart(5, "0")}/events/1.json`] = `{"seq":1,"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
    for (let k = 0; k < 30; k++) {
      const run = `r${String((k * 53) % 1_000).padStart(5, "0")}`;
      await store.writeTree(null, REPO, "main", { files: { [`runs/${run}/events/${k + 2}.json`]: `{"seq":${k + 2}}` }, message: `append ${k}` });
    }
    await store.close();

    const packs = (await readdir(join(gitdir, "objects", "pack"))).filter((name) => name.endsWith(".idx"));
    expect(packs.length).toBeLessThanOrEqual(17);
    await expectFsckClean(gitdir);
    await expectLinearHistory(gitdir, 32);
    const verified = await Promise.all(packs.map((idx) => gitAt(gitdir, ["verify-pack", "-v", join(gitdir, "objects", "pack", idx)])));
    // Versions of the 1 000-entry runs/ folder are stored as deltas of one another.
    expect(verified.some((out) => /chain length = [1-9]/.test(out))).toBe(true);
    expect((await gitAt(gitdir, ["show", "main:runs/r00053/events/3.json"])).trim()).toBe('{"seq":3}');

    // isomorphic-git (the reader other tools may use) reads the delta'd folder and the blobs.
    const tip = await isogit.resolveRef({ fs: nodeFs, gitdir, ref: "refs/heads/main" });
    const { commit } = await isogit.readCommit({ fs: nodeFs, gitdir, oid: tip });
    const root = await isogit.readTree({ fs: nodeFs, gitdir, oid: commit.tree });
    const runsOid = root.tree.find((e) => e.path === "runs")?.oid as string;
    expect((await isogit.readTree({ fs: nodeFs, gitdir, oid: runsOid })).tree).toHaveLength(1_000);
    const blob = await isogit.readBlob({ fs: nodeFs, gitdir, oid: tip, filepath: "runs/r00106/events/4.json" });
    expect(Buffer.from(blob.blob).toString()).toBe('{"seq":4}');

    // A fresh store reads the same history back.
    const fresh = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(1_000);
    expect(Buffer.from((await reads.readBlob("runs/r00159/events/5.json")) as Uint8Array).toString()).toBe('{"seq":5}');
    await fresh.close();
  });
});

describe("commits whose runs/ folder is bigger than one zlib block", () => {
  it("write it into their packs from its own bytes, and git verifies every pack and object", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    // Durable, so the pieces also go through the flushed path; 3,000 runs: a ~120 KB runs/ folder.
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, durability: "fsync", packThreshold: 3, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    const seed: Record<string, string> = {};
    for (let i = 0; i < 3_000; i++) seed[`runs/r${String(i).padStart(5, "0")}/events/1.json`] = `{"seq":1,"i":${i}}`;
    // A blob over 64 KiB too, stored beside the folder in the same pack.
    seed["blobs/big.bin"] = "x".repeat(100_000);
    await store.writeTree(null, REPO, "main", { files: seed, message: "seed" });
    for (let k = 0; k < 20; k++) {
      const files: Record<string, string> = {};
      // Runs spread over the folder get a new event each (runs/ entries change oid only), and every
      // fifth commit adds a run (an insert).
      for (let j = 0; j < 25; j++) files[`runs/r${String((k * 7 + j * 119) % 3_000).padStart(5, "0")}/events/${k + 2}.json`] = `{"seq":${k + 2},"j":${j}}`;
      if (k % 5 === 4) files[`runs/n${k}/events/1.json`] = `{"seq":1}`;
      await store.writeTreeDelta(null, REPO, "main", { message: `append ${k}`, prevalidated: k % 2 === 0, computeDelta: () => ({ puts: files }) });
    }
    await store.close();

    await expectFsckClean(gitdir);
    await expectLinearHistory(gitdir, 22);
    const packs = (await readdir(join(gitdir, "objects", "pack"))).filter((name) => name.endsWith(".idx"));
    for (const idx of packs) await gitAt(gitdir, ["verify-pack", join(gitdir, "objects", "pack", idx)]);
    expect((await gitAt(gitdir, ["ls-tree", "main", "runs/"])).trim().split("\n")).toHaveLength(3_004);
    expect((await gitAt(gitdir, ["show", `main:runs/r${String((19 * 7 + 3 * 119) % 3_000).padStart(5, "0")}/events/21.json`])).trim()).toBe('{"seq":21,"j":3}');
    const fresh = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect(await reads.listDir("runs")).toHaveLength(3_004);
    expect(Buffer.from((await reads.readBlob("blobs/big.bin")) as Uint8Array).length).toBe(100_000);
    await fresh.close();
  });
});

describe("packing small folders and event files", () => {
  it("stores a run's events/ folder versions and similar event files as deltas in self-contained packs, merged at a quiet moment", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    // 40 runs, four events each, one commit per event of each run: small folders rewritten.
    for (let seq = 1; seq <= 4; seq++) {
      for (let run = 0; run < 40; run++) {
        const body = `{"seq":${seq},"type":"Step${seq}","at":"2026-01-01T00:00:${String(run % 60).padStart(2, "0")}.000Z","data":{"run":"r${run}","note":"the same long text in every event of this type"}}`;
        await store.writeTree(null, REPO, "main", { files: { [`runs/r${String(run).padStart(3, "0")}/events/${seq}.json`]: body }, message: `r${run} ${seq}` });
      }
    }
    await store.compactPacks?.(null, REPO);
    await store.close();

    await expectFsckClean(gitdir);
    const packs = (await readdir(join(gitdir, "objects", "pack"))).filter((name) => name.endsWith(".idx"));
    const lines = (await Promise.all(packs.map((idx) => gitAt(gitdir, ["verify-pack", "-v", join(gitdir, "objects", "pack", idx)])))).join("\n").split("\n");
    // `<sha> <type> <size> <packed> <offset> <depth> <base>`: a delta names its base.
    const deltas = (type: string): number => lines.filter((l) => l.split(" ").filter((c) => c !== "")[1] === type && l.split(" ").filter((c) => c !== "").length >= 7).length;
    expect(deltas("tree")).toBeGreaterThan(40);
    expect(deltas("blob")).toBeGreaterThan(40);
    // Self-contained: every delta's base is in the same pack (verify-pack fails otherwise).
    expect(packs.length).toBeLessThanOrEqual(2);
    expect((await gitAt(gitdir, ["cat-file", "-p", "main:runs/r007/events/3.json"])).trim()).toContain('"seq":3');
  });
});

describe("delta chains across merges", () => {
  it("never grow past 50, however many quiet merges an object goes through", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    let n = 0;
    for (let round = 0; round < 6; round++) {
      for (let k = 0; k < 40; k++) {
        n += 1;
        const body = `{"seq":1,"type":"Same","data":{"n":${n},"text":"a long text shared by every one of these event files"}}`;
        await store.writeTree(null, REPO, "main", { files: { [`runs/r${n}/events/1.json`]: body }, message: `r${n}` });
      }
      await store.compactPacks?.(null, REPO);
    }
    await store.close();
    await expectFsckClean(gitdir);
    const packs = (await readdir(join(gitdir, "objects", "pack"))).filter((name) => name.endsWith(".idx"));
    const out = (await Promise.all(packs.map((idx) => gitAt(gitdir, ["verify-pack", "-v", join(gitdir, "objects", "pack", idx)])))).join("\n");
    const depths = [...out.matchAll(/^chain length = (\d+):/gm)].map((m) => Number(m[1]));
    expect(depths.length).toBeGreaterThan(0);
    expect(Math.max(...depths)).toBeLessThanOrEqual(50);
  });
});
