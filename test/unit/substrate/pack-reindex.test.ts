/**
 * A pack's index rebuilt from the pack alone (pack-reindex.ts): the same bytes as the index
 * written with the pack, for the shapes a walk through windows meets (an entry bigger than a
 * window, compressed and stored entries, an empty blob), and refused — never guessed — for a
 * pack whose trailer does not match or whose entries do not fill it.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import { crc32, encodePack, parsePackIndex } from "../../../src/substrate/pack-file.js";
import { CHUNK_BYTES, packTrailer, rebuildPackIndex, salvagePackIndex } from "../../../src/substrate/pack-reindex.js";

const fs = createFsAdapter();
const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function packFile(bytes: Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "wh-reindex-"));
  dirs.push(dir);
  const path = join(dir, "pack-test.pack");
  await writeFile(path, bytes);
  return path;
}

let pauses = 0;
const pause = async (): Promise<void> => {
  pauses++;
  await new Promise((resolve) => setImmediate(resolve));
};

describe("rebuildPackIndex", () => {
  it("gives the index written with the pack, byte for byte: small, compressed, empty and over-a-window entries; pausing between chunks", async () => {
    const objects = [
      hashObject("blob", Buffer.from('{"event":1}')),
      hashObject("blob", Buffer.alloc(0)),
      hashObject("blob", Buffer.from("compressible ".repeat(200))),
      hashObject("blob", randomBytes(CHUNK_BYTES + 300_000)),
      hashObject("blob", Buffer.from("x".repeat(3 * CHUNK_BYTES))),
      ...Array.from({ length: 600 }, (_, i) => hashObject("blob", Buffer.from(`{"seq":${i}}`))),
    ];
    const encoded = encodePack(objects);
    const path = await packFile(encoded.pack);
    pauses = 0;
    const rebuilt = await rebuildPackIndex(fs, path, encoded.pack.length, pause);
    expect(rebuilt.checksum).toBe(encoded.checksum);
    expect(rebuilt.idx.equals(encoded.idx)).toBe(true);
    // The event loop was given back while hashing and walking (counts, not durations).
    expect(pauses).toBeGreaterThan(4);
  });

  it("refuses a pack whose trailer does not match its bytes", async () => {
    const encoded = encodePack([hashObject("blob", Buffer.from('{"event":"one"}')), hashObject("blob", Buffer.from('{"event":"two"}'))]);
    const bytes = Buffer.from(encoded.pack);
    bytes[20] = (bytes[20] as number) ^ 0x01;
    const path = await packFile(bytes);
    await expect(rebuildPackIndex(fs, path, bytes.length, pause)).rejects.toMatchObject({ code: "object_corrupt", data: { reason: "the pack fails its trailer checksum" } });
  });

  it("refuses a pack (trailer matching) whose count promises more entries than it holds", async () => {
    const encoded = encodePack([hashObject("blob", Buffer.from('{"event":"one"}')), hashObject("blob", Buffer.from('{"event":"two"}'))]);
    const body = Buffer.from(encoded.pack.subarray(0, encoded.pack.length - 20));
    body.writeUInt32BE(3, 8);
    const { createHash } = await import("node:crypto");
    const bytes = Buffer.concat([body, createHash("sha1").update(body).digest()]);
    const path = await packFile(bytes);
    await expect(rebuildPackIndex(fs, path, bytes.length, pause)).rejects.toMatchObject({ code: "object_corrupt" });
  });
});

describe("salvagePackIndex", () => {
  const events = Array.from({ length: 5 }, (_, i) => hashObject("blob", Buffer.from(`{"seq":${i},"text":"event number ${i}"}`)));

  /** Checks that every object of `expected` is indexed where the whole pack's index has it, with that entry's CRC-32 and end. */
  function expectIndexed(salvaged: Awaited<ReturnType<typeof salvagePackIndex>>, encoded: ReturnType<typeof encodePack>, bytes: Buffer, expected: readonly string[], lost: readonly string[]): void {
    expect(salvaged.indexed).toBe(expected.length);
    expect(salvaged.unreadable).toBe(lost.length);
    const whole = parsePackIndex("whole", encoded.idx, encoded.pack.length);
    for (const oid of expected) {
      const i = salvaged.index.find(oid);
      expect(i).toBeGreaterThanOrEqual(0);
      const offset = salvaged.index.offsetAt(i);
      expect(offset).toBe(whole.offsetAt(whole.find(oid)));
      const end = salvaged.index.endOf(offset);
      expect(end).toBe(whole.endOf(offset));
      expect(crc32(bytes.subarray(offset, end))).toBe(salvaged.index.crcAt(i));
    }
    for (const oid of lost) expect(salvaged.index.find(oid)).toBe(-1);
  }

  it("indexes every entry but one whose bytes were altered, reading on past it; never under another oid", async () => {
    const encoded = encodePack(events);
    const bytes = Buffer.from(encoded.pack);
    // The store's entries are stored blocks: the text is in the pack as is.
    const at = bytes.indexOf('"event number 2"');
    bytes[at + 3] = "E".charCodeAt(0);
    const path = await packFile(bytes);
    const salvaged = await salvagePackIndex(fs, path, bytes.length, pause);
    expectIndexed(salvaged, encoded, bytes, [0, 1, 3, 4].map((i) => (events[i] as { oid: string }).oid), [(events[2] as { oid: string }).oid]);
    // The altered content's own hash is not indexed either (its stream fails its check).
    const altered = hashObject("blob", Buffer.from('{"seq":2,"text":"Event number 2"}'));
    expect(salvaged.index.find(altered.oid)).toBe(-1);
    expect(salvaged.reason).toMatch(/does not inflate/);
    // The whole rebuild refuses it (its trailer).
    await expect(rebuildPackIndex(fs, path, bytes.length, pause)).rejects.toMatchObject({ code: "object_corrupt" });
  });

  it("indexes the entries before the cut of a truncated pack, none after", async () => {
    const encoded = encodePack(events);
    const whole = parsePackIndex("whole", encoded.idx, encoded.pack.length);
    const cutAt = whole.offsetAt(whole.find((events[3] as { oid: string }).oid)) + 5;
    const bytes = Buffer.from(encoded.pack.subarray(0, cutAt));
    const path = await packFile(bytes);
    const salvaged = await salvagePackIndex(fs, path, bytes.length, pause);
    expectIndexed(salvaged, encoded, bytes, [0, 1, 2].map((i) => (events[i] as { oid: string }).oid), [3, 4].map((i) => (events[i] as { oid: string }).oid));
    expect(salvaged.reason).toMatch(/cannot be read from offset/);
  });

  it("indexes a whole pack whose trailer alone is damaged, every entry", async () => {
    const encoded = encodePack(events);
    const bytes = Buffer.from(encoded.pack);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
    const path = await packFile(bytes);
    expectIndexed(await salvagePackIndex(fs, path, bytes.length, pause), encoded, bytes, events.map((e) => e.oid), []);
  });

  it("refuses a file whose header is not a pack's: nothing can be read", async () => {
    const bytes = Buffer.from(encodePack(events).pack);
    bytes.write("KCAP", 0, "latin1");
    const path = await packFile(bytes);
    await expect(salvagePackIndex(fs, path, bytes.length, pause)).rejects.toMatchObject({ code: "object_corrupt" });
  });
});

describe("packTrailer", () => {
  it("hashes the pack in chunks and stops when asked", async () => {
    const encoded = encodePack([hashObject("blob", randomBytes(3 * CHUNK_BYTES))]);
    const path = await packFile(encoded.pack);
    const sums = await packTrailer(fs, path, encoded.pack.length, pause);
    expect(sums?.computed.equals(sums.trailer)).toBe(true);
    expect(sums?.trailer.toString("hex")).toBe(encoded.checksum);
    let asked = 0;
    expect(await packTrailer(fs, path, encoded.pack.length, pause, () => ++asked > 1)).toBeNull();
  });
});
