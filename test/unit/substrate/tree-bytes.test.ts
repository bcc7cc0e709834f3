/**
 * Point lookups in a tree's stored bytes (tree-bytes.ts) answer as the parsed tree's `findEntry`
 * does, and `CommittedReads.pointOid` answers as `treeOid` without parsing the folder it looks in.
 */
import { describe, expect, it } from "vitest";
import { createCommittedReads, type ObjectSource } from "../../../src/substrate/committed-reads.js";
import { type GitObject, hashObject } from "../../../src/substrate/git-object.js";
import { dirEntriesOfTreeBytes, findInTreeBytes, indexTreeBytes } from "../../../src/substrate/tree-bytes.js";
import { decodeTree, dirEntriesOf, findEntry, makeTree, type ParsedTree, type TreeEntry } from "../../../src/substrate/tree-object.js";
import type { Oid } from "../../../src/substrate/types.js";
import { seededRandom } from "../../helpers/seeded-random.js";

const ALPHABET = ["a", "b", "-", ".", "0", "9", "_", "é", "z", "A"];
const oidOf = (i: number): Oid => i.toString(16).padStart(40, "0");

function randomFolder(seed: number): TreeEntry[] {
  const random = seededRandom(seed);
  const names = new Set<string>();
  const size = 1 + Math.floor(random() * 60);
  while (names.size < size) {
    let name = "";
    const len = 1 + Math.floor(random() * 4);
    for (let i = 0; i < len; i++) name += ALPHABET[Math.floor(random() * ALPHABET.length)];
    names.add(name);
  }
  return [...names].map((name, i) => {
    const kind = random();
    return kind < 0.45 ? { name, mode: "40000", oid: oidOf(i + 1), type: "tree" } : kind < 0.9 ? { name, mode: "100644", oid: oidOf(i + 1), type: "blob" } : { name, mode: "100755", oid: oidOf(i + 1), type: "blob" };
  });
}

describe("findInTreeBytes", () => {
  it("finds every name as findEntry of the parsed tree does, and misses what it misses (200 random folders)", () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { tree, object } = makeTree(randomFolder(seed));
      const bytes = indexTreeBytes(object.content);
      expect(bytes?.sorted).toBe(true);
      const probes = new Set(tree.entries.map((e) => e.name));
      for (const e of tree.entries) {
        probes.add(`${e.name}a`);
        probes.add(`${e.name}-`);
        probes.add(e.name.slice(0, -1));
      }
      for (const name of probes) {
        if (name === "") continue;
        expect(findInTreeBytes(bytes as NonNullable<typeof bytes>, name) ?? null, `seed ${seed}, ${name}`).toEqual(findEntry(tree, name) ?? null);
      }
    }
  });

  it("answers undefined for a tree not in git's order, null for an empty one, and refuses truncated bytes", () => {
    const a = makeTree([{ name: "b", mode: "100644", oid: oidOf(1), type: "blob" }]).object.content;
    const b = makeTree([{ name: "a", mode: "100644", oid: oidOf(2), type: "blob" }]).object.content;
    const unsorted = indexTreeBytes(Buffer.concat([a, b]));
    expect(unsorted?.sorted).toBe(false);
    expect(findInTreeBytes(unsorted as NonNullable<typeof unsorted>, "a")).toBeUndefined();
    const empty = indexTreeBytes(new Uint8Array(0));
    expect(findInTreeBytes(empty as NonNullable<typeof empty>, "a")).toBeNull();
    expect(indexTreeBytes(a.subarray(0, a.length - 3))).toBeNull();
  });
});

describe("dirEntriesOfTreeBytes", () => {
  it("lists a folder as dirEntriesOf the parsed tree does (200 random folders, odd modes and gitlinks among them)", () => {
    const modes = ["100644", "100755", "120000", "160000", "40000", "040000", "100664"];
    for (let seed = 1; seed <= 200; seed++) {
      const random = seededRandom(seed + 1_000);
      const entries = randomFolder(seed).map((e) => {
        if (random() >= 0.2) return e;
        const mode = modes[Math.floor(random() * modes.length)] as string;
        return { ...e, mode, type: mode === "160000" ? "commit" : mode.endsWith("40000") ? "tree" : "blob" } as TreeEntry;
      });
      const { object } = makeTree(entries);
      // makeTree writes the modes as given: parsed back they are what a foreign writer stored.
      expect(dirEntriesOfTreeBytes(object.oid, object.content), `seed ${seed}`).toEqual([...dirEntriesOf(decodeTree(object.oid, object.content))]);
    }
  });

  it("refuses a truncated entry as the parser does", () => {
    const { object } = makeTree([{ name: "a", mode: "100644", oid: oidOf(1), type: "blob" }]);
    for (const cut of [1, 5, 21, object.content.length - 1]) {
      const bytes = object.content.subarray(0, cut);
      expect(() => decodeTree(object.oid, bytes)).toThrow(expect.objectContaining({ code: "object_corrupt" }));
      expect(() => dirEntriesOfTreeBytes(object.oid, bytes)).toThrow(expect.objectContaining({ code: "object_corrupt", message: expect.stringContaining("truncated tree entry") }));
    }
    expect(dirEntriesOfTreeBytes(object.oid, new Uint8Array(0))).toEqual([]);
  });
});

/** An object source over `objects` that counts the trees it parsed. */
function countingSource(objects: Map<Oid, GitObject>, cached: Map<Oid, ParsedTree> = new Map()): ObjectSource & { parsed: Oid[]; reads: Oid[] } {
  const parsed: Oid[] = [];
  const reads: Oid[] = [];
  const get = (oid: Oid): GitObject => {
    const object = objects.get(oid);
    if (object === undefined) throw new Error(`no ${oid}`);
    return object;
  };
  return {
    parsed,
    reads,
    async readTree(oid) {
      const hit = cached.get(oid);
      if (hit !== undefined) return hit;
      parsed.push(oid);
      return decodeTree(oid, get(oid).content);
    },
    async readBlob(oid) {
      return get(oid).content;
    },
    async read(oid) {
      reads.push(oid);
      return get(oid);
    },
    cachedTree: (oid) => cached.get(oid),
  };
}

describe("CommittedReads.pointOid", () => {
  const runIds = Array.from({ length: 5_000 }, (_, i) => `done-${String(i * 2).padStart(7, "0")}`);
  const objects = new Map<Oid, GitObject>();
  const runs = makeTree(runIds.map((name, i) => ({ name, mode: "40000", oid: oidOf(i + 1), type: "tree" as const })));
  objects.set(runs.object.oid, runs.object);
  const root = makeTree([{ name: "runs", mode: "40000", oid: runs.object.oid, type: "tree" }]);
  objects.set(root.object.oid, root.object);

  it("answers as treeOid without parsing the folder it looks in, reading it once for many lookups", async () => {
    const source = countingSource(objects);
    const reads = createCommittedReads(source, "c".repeat(40), root.object.oid);
    const plain = createCommittedReads(countingSource(objects), "c".repeat(40), root.object.oid);
    expect(reads.pointOid).toBeDefined();
    for (const name of ["done-0000000", "done-0000002", "done-0000001", "done-0009998", "done-0010000", "done", "runs"]) {
      expect(await reads.pointOid?.(`runs/${name}`), name).toBe(await plain.treeOid(`runs/${name}`));
    }
    expect(await reads.pointOid?.("runs")).toBe(runs.object.oid);
    expect(await reads.pointOid?.("")).toBe(root.object.oid);
    expect(await reads.pointOid?.("nothing/here")).toBeNull();
    expect(source.parsed).not.toContain(runs.object.oid);
    expect(source.reads.filter((oid) => oid === runs.object.oid)).toHaveLength(1);
  });

  it("uses the parsed folder when the caches hold it", async () => {
    const source = countingSource(objects, new Map([[runs.object.oid, runs.tree]]));
    const reads = createCommittedReads(source, "c".repeat(40), root.object.oid);
    expect(await reads.pointOid?.("runs/done-0000004")).toBe(oidOf(3));
    expect(source.reads).not.toContain(runs.object.oid);
  });
});

/** Raw tree content from entries as a foreign writer may put them: any order, any bytes. */
function rawTree(entries: readonly { mode: string; name: Buffer | string; oid: Oid }[]): Buffer {
  return Buffer.concat(entries.flatMap((e) => [Buffer.from(`${e.mode} `, "latin1"), Buffer.from(e.name), Buffer.from([0]), Buffer.from(e.oid, "hex")]));
}

describe("findInTreeBytes on folders a foreign writer pushed", () => {
  /** What the parsed tree answers for `name`, the reference every point lookup must agree with. */
  const parsedAnswer = (content: Buffer, name: string): TreeEntry | null => findEntry(decodeTree(oidOf(999), content), name) ?? null;
  const bytesAnswer = (content: Buffer, name: string): TreeEntry | null => {
    const bytes = indexTreeBytes(content);
    const found = bytes === null ? undefined : findInTreeBytes(bytes, name);
    return found === undefined ? parsedAnswer(content, name) : found;
  };

  it("a name held both as a file and as a folder (sorted, as git orders them) answers as the parsed tree", () => {
    for (const first of [
      { mode: "100644", name: "a", oid: oidOf(1) },
      { mode: "40000", name: "a", oid: oidOf(1) },
    ]) {
      const content = rawTree([first, { mode: "100644", name: "run", oid: oidOf(2) }, { mode: "40000", name: "run-1", oid: oidOf(3) }, { mode: "40000", name: "run", oid: oidOf(4) }]);
      expect(indexTreeBytes(content)?.sorted).toBe(true);
      for (const name of ["run", "run-1", "a", "ru", "run.1"]) expect(bytesAnswer(content, name), `${first.mode} ${name}`).toEqual(parsedAnswer(content, name));
    }
  });

  it("pointOid answers as treeOid for a foreign archive's runs/ holding a run id as a file and as a folder", async () => {
    for (const firstMode of ["100644", "40000"]) {
      const runsContent = rawTree([{ mode: firstMode, name: "a", oid: oidOf(1) }, { mode: "100644", name: "run-1", oid: oidOf(2) }, { mode: "40000", name: "run-1", oid: oidOf(3) }]);
      const runsObject = hashObject("tree", runsContent);
      const root = makeTree([{ name: "runs", mode: "40000", oid: runsObject.oid, type: "tree" }]);
      const objects = new Map<Oid, GitObject>([
        [runsObject.oid, runsObject],
        [root.object.oid, root.object],
      ]);
      const reads = createCommittedReads(countingSource(objects), "c".repeat(40), root.object.oid);
      const plain = createCommittedReads(countingSource(objects), "c".repeat(40), root.object.oid);
      for (const name of ["run-1", "run", "a"]) expect(await reads.pointOid?.(`runs/${name}`), `${firstMode} ${name}`).toBe(await plain.treeOid(`runs/${name}`));
    }
  });

  it("a lookup of a name with a lone surrogate finds no stored U+FFFD, as the parsed tree", () => {
    const content = rawTree([{ mode: "40000", name: "\uFFFD", oid: oidOf(1) }]);
    expect(indexTreeBytes(content)?.utf8).toBe(true);
    for (const name of ["\uD800", "\uDC00", "\uFFFD"]) expect(bytesAnswer(content, name), JSON.stringify(name)).toEqual(parsedAnswer(content, name));
  });

  it("agrees with the parsed tree on random hostile folders (duplicates, odd modes, bytes that are not UTF-8, any order)", () => {
    const pieces = [Buffer.from("run"), Buffer.from("-"), Buffer.from("."), Buffer.from("1"), Buffer.from([0xff]), Buffer.from([0xc3, 0xa9]), Buffer.from([0xc3]), Buffer.from("/"), Buffer.from("..")];
    const modes = ["40000", "040000", "100644", "160000", "120000", "4000", "400000", "x"];
    for (let seed = 1; seed <= 400; seed++) {
      const random = seededRandom(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
      const entries = Array.from({ length: 1 + Math.floor(random() * 12) }, (_, i) => ({
        mode: pick(modes),
        name: Buffer.concat(Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(pieces))),
        oid: oidOf(i + 1),
      }));
      // Half the time in git's order by bytes (as a writer that sorts would), else as drawn.
      if (random() < 0.5) {
        const key = (e: (typeof entries)[number]): Buffer => Buffer.concat([e.name, Buffer.from(/^0?40000$/.test(e.mode) ? "/" : "")]);
        entries.sort((x, y) => Buffer.compare(key(x), key(y)));
      }
      const content = rawTree(entries);
      const probes = new Set(["run", "run-1", "run.1", "run1", "r", ...entries.map((e) => e.name.toString("utf8"))]);
      for (const name of probes) expect(bytesAnswer(content, name), `seed ${seed}, ${JSON.stringify(name)}`).toEqual(parsedAnswer(content, name));
    }
  });
});
