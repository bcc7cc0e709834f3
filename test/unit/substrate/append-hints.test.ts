/**
 * A fire commit's appends find each run's folder in `runs/` once and hand its position to the
 * tree edit (TreeEdits.puts `at`); folders after the first under `runs/` are checked as one more
 * name. Whatever `runs/` holds (names git orders by the trailing "/" of a folder: `a`, `a-b`,
 * `a.b`, `a0`; a run that is a file; a run folder without `events/`), whatever the appends name
 * (in any order, missing runs, wrong event-folder oids), and when another writer changes `runs/`
 * while the commit is planned, the commit is the one the same files written as plain puts make;
 * appends naming one folder twice are refused (path_violation), never one of them dropped.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { createFsFromVolume, Volume } from "memfs";
import { allowAll, createRepoStore } from "../../../src/substrate/index.js";
import { hashObject } from "../../../src/substrate/git-object.js";
import type { Oid } from "../../../src/substrate/types.js";

const NAMES = ["a", "a-b", "a.b", "a0", "a_", "Z", "~z", "a-", "b"] as const;
type Shape = "absent" | "folder" | "file" | "bare";
const shape = fc.constantFrom<Shape>("absent", "folder", "folder", "file", "bare");

function filesOf(shapes: readonly Shape[], tag: string): Record<string, string> {
  const files: Record<string, string> = { "top.txt": "top" };
  shapes.forEach((s, i) => {
    const name = NAMES[i] as string;
    if (s === "folder") for (let seq = 1; seq <= 2 + i; seq++) files[`runs/${name}/events/${seq}.json`] = `${tag}-${name}-${seq}`;
    if (s === "file") files[`runs/${name}`] = `${tag} file ${name}`;
    if (s === "bare") files[`runs/${name}/notes`] = `${tag} notes ${name}`;
  });
  return files;
}

interface Outcome {
  readonly root?: Oid;
  readonly code?: string;
}

async function commitWith(mode: "puts" | "appends", base: readonly Shape[], foreign: readonly Shape[] | null, appends: readonly { name: string; hint: "none" | "right" | "wrong" }[]): Promise<Outcome> {
  const vol = new Volume();
  const open = () => createRepoStore({ dataDir: "/data", fs: createFsFromVolume(vol), kindHandlers: [{ kind: "k", directoryPrefix: "k" }], authorize: allowAll, watch: false });
  const store = open();
  const rid = { kind: "k", id: "r" };
  await store.initRepo(null, rid);
  await store.writeTree(null, rid, "main", { files: filesOf(base, "base"), message: "base" });
  const before = await store.openCommittedReads(null, rid, "main");
  const hints = new Map<string, Oid | undefined>();
  for (const { name } of appends) hints.set(name, (await before.treeOid(`runs/${name}/events`)) ?? undefined);
  let calls = 0;
  try {
    const result = await store.writeTreeDelta(null, rid, "main", {
      message: "append",
      prevalidated: true,
      computeDelta: async () => {
        // Another writer (another store on the same folder) changes runs/ while this commit is planned.
        if (calls++ === 0 && foreign !== null) {
          const other = open();
          const files = filesOf(foreign, "foreign");
          const tip = await other.openCommittedReads(null, rid, "main");
          const deletes: string[] = [];
          for (const name of NAMES) if ((await tip.treeOid(`runs/${name}`)) !== null || (await tip.readBlob(`runs/${name}`)) !== null) deletes.push(`runs/${name}`);
          await other.writeTreeDelta(null, rid, "main", { message: "foreign", computeDelta: () => ({ deletes, puts: new Map(Object.entries(files)) }) });
          await other.close();
        }
        const content = (name: string, k: number) => Buffer.from(`new ${name} ${k}`);
        if (mode === "puts") {
          const puts = new Map<string, Uint8Array>();
          appends.forEach(({ name }, k) => puts.set(`runs/${name}/events/90${k}.json`, content(name, k)));
          return { puts };
        }
        return {
          appends: appends.map(({ name, hint }, k) => {
            const right = hints.get(name);
            const subOid = hint === "right" && right !== undefined ? right : hint === "wrong" ? hashObject("blob", Buffer.from(name)).oid : undefined;
            return { folder: `runs/${name}`, sub: "events", files: [{ name: `90${k}.json`, content: content(name, k) }], ...(subOid === undefined ? {} : { subOid }) };
          }),
        };
      },
    });
    const reads = await store.openCommittedReads(null, rid, result.commitSha as string);
    if (foreign !== null) expect(calls).toBe(2);
    return { root: (await reads.treeOid("")) as Oid };
  } catch (error) {
    return { code: (error as { code?: string }).code ?? String(error) };
  } finally {
    await store.close();
  }
}

describe("appends under runs/ with position hints", () => {
  it("commit what plain puts commit, for names git orders by a folder's trailing slash, files, bare folders and a foreign write in between", async () => {
    const shapes = fc.array(shape, { minLength: NAMES.length, maxLength: NAMES.length });
    const append = fc.record({ name: fc.constantFrom(...NAMES), hint: fc.constantFrom<"none" | "right" | "wrong">("none", "right", "right", "wrong") });
    await fc.assert(
      fc.asyncProperty(shapes, fc.option(shapes, { nil: null }), fc.array(append, { minLength: 1, maxLength: 6 }), async (base, foreign, appends) => {
        const built = await commitWith("appends", base, foreign, appends);
        // A folder named twice breaks the appends' contract (each folder once): refused, not
        // one of its appends silently dropped.
        if (new Set(appends.map((a) => a.name)).size < appends.length) {
          expect(built).toEqual({ code: "path_violation" });
          return;
        }
        const plain = await commitWith("puts", base, foreign, appends);
        expect(built).toEqual(plain);
      }),
      { numRuns: 200 },
    );
  });
});
