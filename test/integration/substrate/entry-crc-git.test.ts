/**
 * The runs/ folder's pack-entry CRC-32 patched instead of recomputed (entry-crc.ts), checked by
 * git itself: after many commits in a row that change the folder's first and last entries and
 * the ones across its 64 KiB stored-block boundaries, `git index-pack` writes for every pack the
 * very index the store wrote (CRC-32s included), and `git verify-pack` accepts it.
 */
import { copyFile, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { RepoId } from "../../../src/substrate/types.js";
import { plainKind } from "../../helpers/append-merge.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-entry-crc-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const RUNS = 4_000;
const runId = (i: number): string => `r${String(i).padStart(5, "0")}`;

describe("a big folder's patched entry CRC-32, read by git", () => {
  it("every pack's index is the one git index-pack writes, after 25 commits at the folder's edges", async () => {
    const dataDir = await tempDir();
    const gitdir = join(dataDir, "deployments", "dep-1.git");
    // Every commit packed (packThreshold 1): each patched CRC-32 lands in a pack index.
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await store.initRepo(null, REPO);
    const files: Record<string, string> = {};
    for (let i = 0; i < RUNS; i++) files[`runs/${runId(i)}/events/1.json`] = `{"seq":1,"i":${i}}`;
    await store.writeTree(null, REPO, "main", { files, message: "seed" });
    // runs/ entries are 5 + 1 + 6 + 1 + 20 = 33 bytes: the ones holding byte 65,535 and 131,070.
    const edges = [0, RUNS - 1, Math.floor(65_535 / 33), Math.floor(65_535 / 33) + 1, Math.floor(131_070 / 33), Math.floor(131_070 / 33) + 1];
    for (let k = 0; k < 25; k++) {
      const changed: Record<string, string> = {};
      for (const i of [...edges, (k * 131) % RUNS]) changed[`runs/${runId(i)}/events/${k + 2}.json`] = `{"seq":${k + 2}}`;
      await store.writeTree(null, REPO, "main", { files: changed, message: `edges ${k}` });
    }
    await store.close();
    const packDir = join(gitdir, "objects", "pack");
    const checkPacks = async (): Promise<number> => {
      const packs = (await readdir(packDir)).filter((f) => f.endsWith(".pack"));
      const scratch = join(await tempDir(), "scratch");
      await mkdir(scratch, { recursive: true });
      for (const pack of packs) {
        const name = pack.slice(0, -5);
        await gitAt(gitdir, ["verify-pack", join(packDir, `${name}.idx`)]);
        await copyFile(join(packDir, pack), join(scratch, "x.pack"));
        await git(["index-pack", "-o", join(scratch, "x.idx"), join(scratch, "x.pack")]);
        expect((await readFile(join(scratch, "x.idx"))).equals(await readFile(join(packDir, `${name}.idx`))), name).toBe(true);
        for (const f of ["x.pack", "x.idx"]) await rm(join(scratch, f));
      }
      return packs.length;
    };
    expect(await checkPacks()).toBeGreaterThanOrEqual(1);
    // Merged into one pack (big folders as deltas there), checked again.
    const again = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, packThreshold: 1, clock: () => new Date("2026-01-01T00:00:00Z") });
    await again.compactPacks?.(null, REPO);
    await again.close();
    expect(await checkPacks()).toBeGreaterThanOrEqual(1);
    await expectFsckClean(gitdir);
  });
});
