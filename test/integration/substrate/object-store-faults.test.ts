/**
 * What killed writers and damaged files leave in `objects/`: leftovers are removed when the
 * store opens (only ones old enough that no live writer can own them); a damaged pack index is
 * rebuilt from its pack when the pack's checksum matches, else reported as what it is, never as
 * a dangling ref; a big pack's trailer is checked in the background.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile, truncate, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId, RepoStore } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { runGit } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wh-objects-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");
const openStore = (dataDir: string): RepoStore => createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false });

async function aged(path: string, content: string, ageMs: number): Promise<string> {
  await writeFile(path, content);
  const at = new Date(Date.now() - ageMs);
  await utimes(path, at, at);
  return path;
}

describe("leftovers of killed writers", () => {
  it("are removed when the store opens: old temp files, stale empty spares; young ones stay, and so does a pack without an index", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "one" });
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const objects = join(gitdir, "objects");
    const minute = 60_000;
    const removed = [
      await aged(join(objects, "tmp_pack_dead0"), "", 10 * minute),
      await aged(join(objects, "tmp_idx_dead0"), "", 10 * minute),
      await aged(join(objects, "tmp_obj_dead1"), "x", 20 * minute),
    ];
    const kept = [
      // A pack without its index may be the only copy of its objects: indexed when it is a pack
      // whose checksum matches (pack-index-rebuild.test.ts), else left as it is, as git leaves it.
      await aged(join(packDir, `pack-${"a".repeat(40)}.pack`), "PACK half of a merge", 60 * minute),
      await aged(join(packDir, `pack-${"b".repeat(40)}.pack`), "PACK being placed right now", 1_000),
      await aged(join(objects, "tmp_pack_live0"), "", 10_000),
      await aged(join(objects, "tmp_obj_live1"), "x", 10 * minute),
    ];
    const packsBefore = (await readdir(packDir)).filter((n) => n.endsWith(".idx"));

    const reopened = openStore(dataDir);
    expect(await reopened.resolveRef(null, REPO, "main")).toMatch(/^[0-9a-f]{40}$/);
    await reopened.close();
    expect(removed.filter((p) => existsSync(p))).toEqual([]);
    expect(kept.filter((p) => !existsSync(p))).toEqual([]);
    // Every real pack is still there.
    expect((await readdir(packDir)).filter((n) => n.endsWith(".idx"))).toEqual(packsBefore);
  });
});

describe("a truncated pack index", () => {
  it("is rebuilt from its pack (whose checksum matches), the same bytes, and told once", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const { commitSha } = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{}" }, message: "packed" });
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const idx = (await readdir(packDir)).filter((n) => n.endsWith(".idx"));
    expect(idx).toHaveLength(1);
    const path = join(packDir, idx[0] as string);
    const original = await readFile(path);
    await truncate(path, Math.floor(original.length / 2));

    const warnings: (Error & { code?: string })[] = [];
    const listen = (w: Error): void => {
      warnings.push(w);
    };
    process.on("warning", listen);
    const rebuilt = openStore(dataDir);
    try {
      expect(await rebuilt.resolveRef(null, REPO, "main")).toBe(commitSha);
      const reads = await rebuilt.openCommittedReads(null, REPO, "main");
      expect(Buffer.from((await reads.readBlob("runs/r1/events/1.json")) as Uint8Array).toString()).toBe("{}");
    } finally {
      await rebuilt.close();
      // A warning is emitted on the next tick: give it one turn of the loop.
      await new Promise((resolve) => setImmediate(resolve));
      process.off("warning", listen);
    }
    expect((await readFile(path)).equals(original)).toBe(true);
    expect(warnings.filter((w) => w.code === "WORKFLOW_HOST_PACK_INDEX" && w.message.includes(idx[0]?.replace(/\.idx$/, "") as string))).toHaveLength(1);
  });

  it("with its pack failing its checksum too, is indexed in memory: what reads is served, the damaged object is object_corrupt naming the pack; nothing rewritten", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const { commitSha } = await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": '{"a":"event"}', "runs/r2/events/1.json": '{"kept":"event"}' }, message: "packed" });
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const idx = (await readdir(packDir)).filter((n) => n.endsWith(".idx"));
    expect(idx).toHaveLength(1);
    const packName = (idx[0] as string).replace(/\.idx$/, "");
    const path = join(packDir, idx[0] as string);
    await truncate(path, Math.floor((await readFile(path)).length / 2));
    const packPath = path.replace(/\.idx$/, ".pack");
    const pack = await readFile(packPath);
    const at = pack.indexOf('{"a":"event"}');
    expect(at).toBeGreaterThan(0);
    pack[at + 2] = "b".charCodeAt(0);
    await writeFile(packPath, pack);
    const damagedIdx = await readFile(path);
    const listed = (await readdir(packDir)).sort();

    const damaged = openStore(dataDir);
    try {
      expect(await damaged.resolveRef(null, REPO, "main")).toBe(commitSha);
      const reads = await damaged.openCommittedReads(null, REPO, "main");
      expect(Buffer.from((await reads.readBlob("runs/r2/events/1.json")) as Uint8Array).toString()).toBe('{"kept":"event"}');
      // Asked twice (a rescan after each miss): the same answer, the pack not walked again.
      for (let k = 0; k < 2; k++) {
        const error = await reads.readBlob("runs/r1/events/1.json").catch((e: unknown) => e);
        expect(error).toMatchObject({ code: "object_corrupt", data: { pack: packName, damaged: true } });
      }
    } finally {
      await damaged.close();
    }
    expect((await readFile(path)).equals(damagedIdx)).toBe(true);
    expect((await readFile(packPath)).equals(pack)).toBe(true);
    expect((await readdir(packDir)).sort()).toEqual(listed);
  });
});

const OK_TEXT = '{"ok":"small"}';

/**
 * A deployment whose one pack is over 8 MiB (read through windows) with one byte of its big blob
 * flipped: only a read of that blob, or the pack's trailer, would see it.
 * @returns the data dir and the pack's name (no extension)
 */
async function damagedBigPack(): Promise<{ dataDir: string; packName: string }> {
  const dataDir = await tempDir();
  const store = openStore(dataDir);
  await store.initRepo(null, REPO);
  // Random text does not shrink: the pack is over 8 MiB.
  const big = randomBytes(7 * 1024 * 1024).toString("base64");
  await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": OK_TEXT, "runs/r2/blob.txt": big }, message: "big" });
  await store.close();
  const packDir = join(gitdirOf(dataDir), "objects", "pack");
  const packs = (await readdir(packDir)).filter((n) => n.endsWith(".pack"));
  expect(packs).toHaveLength(1);
  const packPath = join(packDir, packs[0] as string);
  const bytes = await readFile(packPath);
  expect(bytes.length).toBeGreaterThan(8 * 1024 * 1024);
  const at = bytes.indexOf(big.slice(0, 64));
  expect(at).toBeGreaterThan(0);
  bytes[at + 1_000_000] = bytes[at + 1_000_000] === 0x41 ? 0x42 : 0x41;
  await writeFile(packPath, bytes);
  return { dataDir, packName: (packs[0] as string).replace(/\.pack$/, "") };
}

describe("a pack over 8 MiB (read through windows) that fails its checksum", () => {
  it("is found by a check of its trailer in the background and told as a small pack's is; its other objects read", async () => {
    const { dataDir, packName } = await damagedBigPack();
    const warnings: (Error & { code?: string })[] = [];
    const listen = (w: Error): void => {
      warnings.push(w);
    };
    process.on("warning", listen);
    const reopened = openStore(dataDir);
    try {
      const reads = await reopened.openCommittedReads(null, REPO, "main");
      expect(Buffer.from((await reads.readBlob("runs/r1/events/1.json")) as Uint8Array).toString()).toBe(OK_TEXT);
      await vi.waitFor(() => expect(warnings.filter((w) => w.code === "WORKFLOW_HOST_PACK_CHECKSUM" && w.message.includes(packName))).toHaveLength(1), { timeout: 20_000, interval: 20 });
      expect(Buffer.from((await reads.readBlob("runs/r1/events/1.json")) as Uint8Array).toString()).toBe(OK_TEXT);
      await expect(reads.readBlob("runs/r2/blob.txt")).rejects.toMatchObject({ code: "object_corrupt" });
    } finally {
      await reopened.close();
      process.off("warning", listen);
    }
  });

  it("waits a while after the first read before it hashes the pack, and a close during that wait returns without it", async () => {
    const { dataDir, packName } = await damagedBigPack();
    const warnings: (Error & { code?: string })[] = [];
    const listen = (w: Error): void => {
      warnings.push(w);
    };
    const told = (): (Error & { code?: string })[] => warnings.filter((w) => w.code === "WORKFLOW_HOST_PACK_CHECKSUM" && w.message.includes(packName));
    process.on("warning", listen);
    try {
      // Only the timers are faked: the check's wait can then end only by close (a close that
      // waited it out would never return), while the file system and the event loop run as usual.
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      try {
        const reopened = openStore(dataDir);
        const reads = await reopened.openCommittedReads(null, REPO, "main");
        expect(Buffer.from((await reads.readBlob("runs/r1/events/1.json")) as Uint8Array).toString()).toBe(OK_TEXT);
        await reopened.close();
        expect(told()).toEqual([]);
      } finally {
        vi.useRealTimers();
      }
      // A reader opened later checks the pack once its wait is over.
      const again = openStore(dataDir);
      try {
        await (await again.openCommittedReads(null, REPO, "main")).readBlob("runs/r1/events/1.json");
        await vi.waitFor(() => expect(told()).toHaveLength(1), { timeout: 20_000, interval: 20 });
      } finally {
        await again.close();
      }
    } finally {
      process.off("warning", listen);
    }
  });
});

describe("a pack that fails its checksum (one byte flipped inside one object)", () => {
  it("is read object by object: the damaged object is object_corrupt naming it, never its bytes; every other object reads; git fsck names the same one", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const hurtText = `{"hurt":"${"h".repeat(200)}"}`;
    const okText = `{"ok":"${"k".repeat(200)}"}`;
    await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": hurtText, "runs/r2/events/1.json": okText }, message: "packed" });
    const before = await store.openCommittedReads(null, REPO, "main");
    const hurtOid = (await before.treeOid("runs/r1/events/1.json")) as string;
    const okOid = (await before.treeOid("runs/r2/events/1.json")) as string;
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const packs = (await readdir(packDir)).filter((n) => n.endsWith(".pack"));
    const path = join(packDir, packs.at(-1) as string);
    const bytes = await readFile(path);
    // The store writes an event stored (not compressed): its text is in the pack as it is.
    const at = bytes.indexOf(hurtText);
    expect(at).toBeGreaterThan(0);
    bytes[at + 20] = "x".charCodeAt(0);
    await writeFile(path, bytes);
    const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--full", "--no-dangling"]);
    expect(fsck.code).not.toBe(0);
    expect(`${fsck.stdout}${fsck.stderr}`).toContain(hurtOid);
    expect(`${fsck.stdout}${fsck.stderr}`).not.toContain(okOid);

    const reopened = openStore(dataDir);
    try {
      const reads = await reopened.openCommittedReads(null, REPO, "main");
      const damaged = { code: "object_corrupt", data: expect.objectContaining({ oid: hurtOid, damaged: true }) };
      await expect(reads.readBlobByOid(hurtOid)).rejects.toMatchObject(damaged);
      expect(Buffer.from(await reads.readBlobByOid(okOid)).toString()).toBe(okText);
      expect((await reads.listDir("runs")).map((e) => e.name)).toEqual(["r1", "r2"]);
      // A walk (blobs served as views of the pack in memory) refuses it too, and serves the rest.
      const scan = reads.scan?.() ?? reads;
      await expect(scan.readBlobsByOid?.([okOid, hurtOid]) ?? scan.readBlobByOid(hurtOid)).rejects.toMatchObject(damaged);
      expect(Buffer.from((await (scan.readBlobsByOid?.([okOid]) ?? Promise.all([scan.readBlobByOid(okOid)])))[0] as Uint8Array).toString()).toBe(okText);
      await expect(reads.readBlobByOid(hurtOid)).rejects.toMatchObject(damaged);
    } finally {
      await reopened.close();
    }
  });
});

describe("a damaged pack among packs being merged", () => {
  it("is left out of the merge, never sealed under a fresh checksum: its damaged object is never served, the others merge", async () => {
    const dataDir = await tempDir();
    const gitdir = gitdirOf(dataDir);
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    const texts = [0, 1, 2, 3].map((i) => `{"event":${i},"pad":"${String(i).repeat(200)}"}`);
    for (const [i, text] of texts.entries()) {
      await store.writeTree(null, REPO, "main", { files: { [`runs/r${i}/events/1.json`]: text, [`runs/r${i}/note.json`]: `{"n":${i}}` }, message: `run ${i}` });
    }
    const reads = await store.openCommittedReads(null, REPO, "main");
    const oids = await Promise.all(texts.map(async (_, i) => (await reads.treeOid(`runs/r${i}/events/1.json`)) as string));
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const packNames = (await readdir(packDir)).filter((n) => n.endsWith(".pack"));
    expect(packNames.length).toBeGreaterThanOrEqual(3);
    // Damaged before anything reads it: only a merge meets it.
    let damagedPack = "";
    for (const name of packNames) {
      const bytes = await readFile(join(packDir, name));
      const at = bytes.indexOf(texts[0] as string);
      if (at < 0) continue;
      bytes[at + 30] = "x".charCodeAt(0);
      await writeFile(join(packDir, name), bytes);
      damagedPack = name;
    }
    expect(damagedPack).not.toBe("");

    const reopened = openStore(dataDir);
    try {
      // Its packs listed (the tip read), not the damaged one's bytes.
      await reopened.resolveRef(null, REPO, "main");
      await reopened.compactPacks?.(null, REPO);
      await reopened.compactPacks?.(null, REPO);
      const after = (await readdir(packDir)).filter((n) => n.endsWith(".pack"));
      // The damaged pack stays as it is; the others were merged.
      expect(after).toContain(damagedPack);
      expect(after.length).toBeLessThan(packNames.length);
      const fresh = await reopened.openCommittedReads(null, REPO, "main");
      await expect(fresh.readBlobByOid(oids[0] as string)).rejects.toMatchObject({ code: "object_corrupt", data: expect.objectContaining({ oid: oids[0], damaged: true }) });
      for (const [i, oid] of oids.entries()) if (i > 0) expect(Buffer.from(await fresh.readBlobByOid(oid)).toString()).toBe(texts[i]);
      const fsck = await runGit([`--git-dir=${gitdir}`, "fsck", "--full", "--no-dangling"]);
      expect(`${fsck.stdout}${fsck.stderr}`).toContain(oids[0]);
      for (const oid of oids.slice(1)) expect(`${fsck.stdout}${fsck.stderr}`).not.toContain(oid);
    } finally {
      await reopened.close();
    }
  });
});
