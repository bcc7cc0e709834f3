/**
 * A repo store over an in-memory file system, for substrate unit tests.
 */
import { allowAll } from "../../src/substrate/allow-all.js";
import { createRepoStore } from "../../src/substrate/repo-store.js";
import type { RepoId, RepoStore, RepoStoreOptions } from "../../src/substrate/types.js";
import { plainKind } from "./append-merge.js";
import { instantTimers } from "./manual-timers.js";
import { createMemFs, type MemFs } from "./memfs.js";

export const DATA_DIR = "/data";
export const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
export const GITDIR = `${DATA_DIR}/deployments/dep-1.git`;

/** 2026-01-01T00:00:00Z, advanced one second per call, so commit ids are stable. */
export function steppingClock(startIso = "2026-01-01T00:00:00Z"): () => Date {
  let ms = Date.parse(startIso);
  return () => {
    const now = new Date(ms);
    ms += 1000;
    return now;
  };
}

/**
 * A store on `fs` (a fresh memfs by default) with no watching and instant back-off timers.
 * Objects are written loose unless `packThreshold` is given: these tests look at object files
 * one by one (torn objects, the commit chain); pack files have their own tests.
 */
export function createMemStore(overrides: Partial<RepoStoreOptions> & { fs?: MemFs } = {}): { store: RepoStore; fs: MemFs } {
  const fs = overrides.fs ?? createMemFs();
  const store = createRepoStore({
    dataDir: DATA_DIR,
    kindHandlers: [plainKind],
    authorize: allowAll,
    clock: steppingClock(),
    watch: false,
    timers: instantTimers,
    packThreshold: Number.POSITIVE_INFINITY,
    ...overrides,
    fs,
  });
  return { store, fs };
}

/** Names of every loose object file in a memfs repository. */
export function looseObjects(fs: MemFs, gitdir = GITDIR): string[] {
  const out: string[] = [];
  for (const dir of fs.readdirSync(`${gitdir}/objects`) as string[]) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const name of fs.readdirSync(`${gitdir}/objects/${dir}`) as string[]) out.push(`${dir}${name}`);
  }
  return out.sort();
}
