import { existsSync } from "node:fs";
import { readdir, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allowAll } from "../../../src/substrate/allow-all.js";
import { createRepoStore } from "../../../src/substrate/repo-store.js";
import type { CommitChange, RepoId, RepoStore, RepoStoreOptions } from "../../../src/substrate/types.js";
import { appendNext, plainKind } from "../../helpers/append-merge.js";
import { git, gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { expectFsckClean, expectLinearHistory } from "./fixtures/git-checks.js";

const tempDir = useTempDirs("wh-git-interop-");
const REPO: RepoId = { kind: plainKind.kind, id: "dep-1" };
const gitdirOf = (dataDir: string): string => join(dataDir, "deployments", "dep-1.git");

function openStore(dataDir: string, extra: Partial<RepoStoreOptions> = {}): RepoStore {
  return createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: false, ...extra });
}

describe("git CLI interoperability", () => {
  it("git reads every commit the store made; log, show and fsck --strict agree", async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir, { durability: "fsync", clock: () => new Date("2026-01-01T00:00:00Z") });
    const { commitSha: genesis } = await store.initRepo(null, REPO);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await store.writeTreePreservingPrefix(null, REPO, "main", appendNext("r1", (seq) => ({ seq })))).commitSha as string);
    made.push((await store.writeTree(null, REPO, "main", { files: { "runs/r1/events/1.json": "{\"seq\":1,\"v\":2}", "README.md": "# dep\n" }, message: "edit" })).commitSha as string);
    made.push((await store.writeTreeDelta(null, REPO, "main", { message: "delete", computeDelta: () => ({ deletes: ["README.md"] }) })).commitSha as string);
    const gitdir = gitdirOf(dataDir);
    await expectFsckClean(gitdir);
    const shas = await expectLinearHistory(gitdir, 8);
    expect(shas).toEqual([...made].reverse().concat(genesis));
    expect((await gitAt(gitdir, ["log", "-1", "--format=%an <%ae> %at %s", genesis])).trim()).toBe("workflow-host <workflow-host@localhost> 1767225600 genesis");
    expect(await gitAt(gitdir, ["show", `${made[2]}:runs/r1/events/3.json`])).toBe("{\"seq\":3}");
    expect(await gitAt(gitdir, ["diff", "--name-status", `${made[5]}^`, made[5] as string])).toBe("A\tREADME.md\nM\truns/r1/events/1.json\n");
    expect((await gitAt(gitdir, ["symbolic-ref", "HEAD"])).trim()).toBe("refs/heads/main");
    expect((await gitAt(gitdir, ["rev-parse", "--is-bare-repository"])).trim()).toBe("true");
    // A clone sees the same history.
    const clone = join(await tempDir(), "clone");
    await git(["clone", "--quiet", gitdir, clone]);
    expect((await git(["rev-parse", "HEAD"], { cwd: clone })).trim()).toBe(made[6]);
    await store.close();
  });

  it("subscribe yields a commit pushed by the git CLI", async () => {
    const dataDir = await tempDir();
    const store = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll });
    await store.initRepo(null, REPO);
    const controller = new AbortController();
    const iterator = store.subscribe(null, REPO, "main", { signal: controller.signal })[Symbol.asyncIterator]();
    const next = iterator.next();

    const clone = join(await tempDir(), "work");
    await git(["clone", "--quiet", gitdirOf(dataDir), clone]);
    await mkdir(join(clone, "runs", "r1", "events"), { recursive: true });
    await writeFile(join(clone, "runs", "r1", "events", "1.json"), "{\"seq\":1,\"type\":\"TimerSet\"}");
    await git(["add", "runs/r1/events/1.json"], { cwd: clone });
    await git(["commit", "--quiet", "-m", "from git"], { cwd: clone });
    const pushed = (await git(["rev-parse", "HEAD"], { cwd: clone })).trim();
    await git(["push", "--quiet", "origin", "HEAD:main"], { cwd: clone });

    const got = (await next).value as CommitChange;
    expect(got.commitSha).toBe(pushed);
    expect(got.changes).toEqual([{ path: "runs/r1/events/1.json", oid: expect.stringMatching(/^[0-9a-f]{40}$/), status: "added" }]);
    controller.abort();
    expect((await iterator.next()).done).toBe(true);
    await store.close();
  });

  it("wakes a subscriber on OS file events for every burst of another writer's commits, without its poll", async () => {
    const dataDir = await tempDir();
    // A poll of one minute: only the OS hint can wake the subscriber within the test.
    const subscriber = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: { pollMs: 60_000, chokidar: true } });
    const writer = openStore(dataDir);
    await subscriber.initRepo(null, REPO);
    const controller = new AbortController();
    const iterator = subscriber.subscribe(null, REPO, "main", { signal: controller.signal })[Symbol.asyncIterator]();
    // The first next() fixes the start and lets the watcher arm before the first write.
    const first = iterator.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    let pending: Promise<IteratorResult<CommitChange>> = first;
    for (let burst = 0; burst < 8; burst++) {
      // Two ref moves a few milliseconds apart, as a busy host makes them.
      const shas: string[] = [];
      for (let k = 0; k < 2; k++) {
        const written = await writer.writeTreePreservingPrefix(null, REPO, "main", appendNext(`r${burst}`, (seq) => ({ seq, burst, k })));
        shas.push(written.commitSha as string);
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      // With a one-minute poll, only the OS hint can deliver these within the test's timeout.
      for (const sha of shas) {
        const change = (await pending).value as CommitChange;
        expect(change.commitSha).toBe(sha);
        pending = iterator.next();
      }
    }
    controller.abort();
    await Promise.all([subscriber.close(), writer.close()]);
  }, 20_000);

  it("wakes a subscriber of a ref whose folder git pack-refs removed, when another store writes it again", async () => {
    const dataDir = await tempDir();
    const subscriber = createRepoStore({ dataDir, kindHandlers: [plainKind], authorize: allowAll, watch: { pollMs: 60_000, chokidar: true } });
    const writer = openStore(dataDir);
    await subscriber.initRepo(null, REPO);
    const gitdir = gitdirOf(dataDir);
    await gitAt(gitdir, ["update-ref", "refs/heads/deploy/main", "main"]);
    const controller = new AbortController();
    const iterator = subscriber.subscribe(null, REPO, "refs/heads/deploy/main", { signal: controller.signal })[Symbol.asyncIterator]();
    let pending = iterator.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let round = 0; round < 5; round++) {
      // Moves the ref into packed-refs and deletes the emptied folder refs/heads/deploy/.
      await gitAt(gitdir, ["pack-refs", "--all"]);
      expect(existsSync(join(gitdir, "refs", "heads", "deploy"))).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // The write makes the folder again and, milliseconds later, the ref in it.
      const written = await writer.writeTree(null, REPO, "refs/heads/deploy/main", { files: { [`runs/r${round}/events/1.json`]: "{}" }, message: `round ${round}` });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), 3_000);
      });
      const seen = await Promise.race([pending, late]);
      clearTimeout(timer);
      expect(seen === "late" ? `round ${round}: not seen within 3 s` : (seen.value as CommitChange).commitSha).toBe(written.commitSha);
      pending = iterator.next();
    }
    controller.abort();
    await Promise.all([subscriber.close(), writer.close()]);
  }, 30_000);

  it("reads a repository whose objects and refs were packed by git gc, and keeps writing to it", async () => {
    const dataDir = await tempDir();
    const store = openStore(dataDir);
    await store.initRepo(null, REPO);
    for (let i = 0; i < 12; i++) await store.writeTreePreservingPrefix(null, REPO, "main", appendNext(`r${i % 3}`, (seq) => ({ seq, i })));
    const gitdir = gitdirOf(dataDir);
    const tipBefore = (await gitAt(gitdir, ["rev-parse", "main"])).trim();
    await gitAt(gitdir, ["gc", "--quiet", "--prune=now"]);
    const fanout = (await readdir(join(gitdir, "objects"))).filter((name) => /^[0-9a-f]{2}$/.test(name));
    expect(fanout).toEqual([]);
    expect((await readdir(join(gitdir, "objects", "pack"))).some((name) => name.endsWith(".pack"))).toBe(true);

    const fresh = openStore(dataDir); // no cache: every read goes to the pack
    expect(await fresh.resolveRef(null, REPO, "main")).toBe(tipBefore);
    const reads = await fresh.openCommittedReads(null, REPO, "main");
    expect((await reads.listDir("runs/r2/events")).map((e) => e.name)).toEqual(["1.json", "2.json", "3.json", "4.json"]);
    expect(Buffer.from((await reads.readBlob("runs/r2/events/4.json")) as Uint8Array).toString()).toBe("{\"seq\":4,\"i\":11}");
    const all: CommitChange[] = [];
    for await (const change of fresh.subscribe(null, REPO, "main", { from: "genesis" })) {
      all.push(change);
      if (all.length === 13) break;
    }
    expect(all[12]?.commitSha).toBe(tipBefore);
    const after = await fresh.writeTreePreservingPrefix(null, REPO, "main", appendNext("r0", (seq) => ({ seq })));
    expect(after).toMatchObject({ committed: true, parentSha: tipBefore, result: 5 });
    await expectFsckClean(gitdir);
    await expectLinearHistory(gitdir, 14);
    await Promise.all([store.close(), fresh.close()]);
  });
});
