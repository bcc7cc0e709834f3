/**
 * Reverse indexes (pack-rev-index.ts): what a merge on the event loop writes beside its pack,
 * what is refused when read, and that a pack index answers the same with one as without.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parsePackIndex } from "../../../src/substrate/pack-index.js";
import { encodeReverseIndex, packOrder, parseReverseIndex } from "../../../src/substrate/pack-rev-index.js";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";

const PACK_DIR = `${GITDIR}/objects/pack`;

/** A memfs deployment whose packs were merged (on this thread: memfs) into one big pack. */
async function merged(): Promise<{ fs: ReturnType<typeof createMemStore>["fs"]; name: string }> {
  const { store, fs } = createMemStore({ packThreshold: 1 });
  await store.initRepo(null, REPO);
  for (const part of [0, 1]) {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1_500; i++) files[`runs/r${part}-${i}/events/1.json`] = `{"seq":1,"part":${part},"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files, message: `seed ${part}` });
  }
  await store.writeTree(null, REPO, "main", { files: { "runs/r0-1/events/2.json": "{}" }, message: "append" });
  // Quiet merges until the seeds' packs are one.
  for (let i = 0; i < 3; i++) await store.compactPacks?.(null, REPO);
  await store.close();
  const revs = (fs.readdirSync(PACK_DIR) as string[]).filter((f) => f.endsWith(".rev"));
  expect(revs).toHaveLength(1);
  return { fs, name: (revs[0] as string).slice(0, -4) };
}

function load(fs: ReturnType<typeof createMemStore>["fs"], name: string) {
  const size = (fs.statSync(`${PACK_DIR}/${name}.pack`) as { size: number }).size;
  const index = parsePackIndex(name, fs.readFileSync(`${PACK_DIR}/${name}.idx`) as Buffer, size);
  const rev = fs.readFileSync(`${PACK_DIR}/${name}.rev`) as Buffer;
  return { index, rev, size };
}

describe("reverse index", () => {
  it("a merge on the event loop writes one that reads back as the pack's order", async () => {
    const { fs, name } = await merged();
    const { index, rev } = load(fs, name);
    expect(index.count).toBeGreaterThan(4_096);
    expect(Array.from(parseReverseIndex(rev, index) ?? [])).toEqual(Array.from(packOrder(index), (i) => index.offsetAt(i)));
    expect(rev.equals(encodeReverseIndex(index, packOrder(index)))).toBe(true);
  });

  it("refuses a wrong size, header, pack checksum, file checksum or order", async () => {
    const { fs, name } = await merged();
    const { index, rev } = load(fs, name);
    const resign = (bytes: Buffer): Buffer => {
      createHash("sha1").update(bytes.subarray(0, bytes.length - 20)).digest().copy(bytes, bytes.length - 20);
      return bytes;
    };
    const changed = (at: number, value: number, sign: boolean): Buffer => {
      const copy = Buffer.from(rev);
      copy[at] = value;
      return sign ? resign(copy) : copy;
    };
    expect(parseReverseIndex(rev.subarray(0, rev.length - 4), index)).toBeNull();
    expect(parseReverseIndex(changed(0, 0x53, true), index)).toBeNull();
    expect(parseReverseIndex(changed(7, 2, true), index)).toBeNull();
    expect(parseReverseIndex(changed(11, 2, true), index)).toBeNull();
    expect(parseReverseIndex(changed(rev.length - 40, (rev[rev.length - 40] as number) ^ 1, true), index)).toBeNull();
    expect(parseReverseIndex(changed(rev.length - 1, (rev[rev.length - 1] as number) ^ 1, false), index)).toBeNull();
    // Two positions swapped, checksum made right: well formed, but not this pack's order.
    const swapped = Buffer.from(rev);
    swapped.copy(swapped, 12, 16, 20);
    rev.copy(swapped, 16, 12, 16);
    expect(parseReverseIndex(resign(swapped), index)).toBeNull();
    // A position past the last entry.
    expect(parseReverseIndex(changed(12, 0xff, true), index)).toBeNull();
  });

  it("endOf answers the same for every entry with the reverse index as by sorting", async () => {
    const { fs, name } = await merged();
    const { index, rev, size } = load(fs, name);
    const sorted = parsePackIndex(name, fs.readFileSync(`${PACK_DIR}/${name}.idx`) as Buffer, size);
    index.useReverseIndex(parseReverseIndex(rev, index) as Uint32Array);
    expect(index.endOf(index.offsetAt(0))).toBeGreaterThan(index.offsetAt(0));
    for (let i = 0; i < index.count; i++) expect(index.endOf(index.offsetAt(i))).toBe(sorted.endOf(sorted.offsetAt(i)));
  });
});
