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
import { encodePack } from "../../../src/substrate/pack-file.js";
import { CHUNK_BYTES, packTrailer, rebuildPackIndex } from "../../../src/substrate/pack-reindex.js";

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
