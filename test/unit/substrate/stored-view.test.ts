/**
 * A scan's blob reads take an entry stored uncompressed (as the store writes events) as a view of
 * the pack bytes in memory, not a copy (pack-reader.ts `storedView`); anything else is inflated
 * as before, and the bytes are the same either way.
 */
import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { storedZlib } from "../../../src/substrate/pack-file.js";
import { storedView } from "../../../src/substrate/pack-reader.js";
import { createMemStore, REPO } from "../../helpers/memfs-repo-store.js";

/** An entry as a pack holds it: a header byte or two, then the zlib stream. */
function entry(stream: Uint8Array, headBytes = 2): { bytes: Buffer; dataAt: number } {
  return { bytes: Buffer.concat([Buffer.alloc(headBytes, 0x95), stream, Buffer.from([1, 2, 3])]), dataAt: headBytes };
}

describe("storedView", () => {
  it("is the content of one final stored block, as a view of the entry's bytes", () => {
    for (const size of [0, 1, 200, 65_535]) {
      const content = Buffer.alloc(size, 0x61);
      const { bytes, dataAt } = entry(storedZlib(content));
      const view = storedView(bytes, dataAt, size);
      expect(view?.equals(content)).toBe(true);
      expect(view?.buffer).toBe(bytes.buffer);
    }
  });

  it("declines a compressed stream, several blocks, a size that differs, a bad length check or a truncated entry", () => {
    const content = Buffer.from('{"seq":1,"type":"WorkflowStarted"}');
    const compressed = entry(deflateSync(content));
    expect(storedView(compressed.bytes, compressed.dataAt, content.length)).toBeNull();
    const several = entry(storedZlib(Buffer.alloc(70_000, 0x62)));
    expect(storedView(several.bytes, several.dataAt, 70_000)).toBeNull();
    const stored = entry(storedZlib(content));
    expect(storedView(stored.bytes, stored.dataAt, content.length + 1)).toBeNull();
    const badCheck = Buffer.from(stored.bytes);
    badCheck[stored.dataAt + 5] = (badCheck[stored.dataAt + 5] as number) ^ 1;
    expect(storedView(badCheck, stored.dataAt, content.length)).toBeNull();
    expect(storedView(stored.bytes.subarray(0, stored.dataAt + 7 + content.length - 1), stored.dataAt, content.length)).toBeNull();
  });

  it("serves a scan's reads of packed event blobs without a copy each, with the same bytes as a plain read", async () => {
    const { store, fs } = createMemStore({ packThreshold: 3 });
    await store.initRepo(null, REPO);
    const files: Record<string, string> = {};
    for (let i = 1; i <= 20; i++) files[`runs/r1/events/${i}.json`] = `{"seq":${i},"type":"StepCompleted","data":{"stepId":"s${i}"}}`;
    await store.writeTree(null, REPO, "main", { files, message: "seed" });
    await store.close();
    // A fresh store: nothing cached from the write.
    const { store: fresh } = createMemStore({ fs });
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    const oids = (await reads.listDir("runs/r1/events")).map((e) => e.oid);
    const scan = reads.scan?.();
    const read = async (): Promise<Uint8Array[]> => (await scan?.readBlobsByOid?.(oids)) ?? [];
    await read();
    const [a, b] = [await read(), await read()];
    for (let i = 0; i < oids.length; i++) {
      const plain = await reads.readBlobByOid(oids[i] as string);
      expect(Buffer.from(a[i] as Uint8Array).equals(Buffer.from(plain))).toBe(true);
      // The same bytes of the pack, twice: a view, not two copies.
      expect(a[i]?.buffer).toBe(b[i]?.buffer);
      expect(a[i]?.byteOffset).toBe(b[i]?.byteOffset);
    }
    // A scan lists a folder by oid from its stored bytes, as the reads list it by path.
    const eventsOid = (await reads.treeOid("runs/r1/events")) as string;
    expect(await scan?.listTree?.(eventsOid)).toEqual(await reads.listDir("runs/r1/events"));
    expect(await scan?.listTree?.((await reads.treeOid("runs/r1")) as string)).toEqual(await reads.listDir("runs/r1"));
    await expect(scan?.listTree?.(oids[0] as string)).rejects.toMatchObject({ code: "object_corrupt" });
    await fresh.close();
  });
});
