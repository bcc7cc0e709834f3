/**
 * A FIFO, a device, a socket or a folder where the data dir holds a small file (a ref,
 * `packed-refs`, a loose object, a pack or its index, the host lock's holder record) is refused
 * unread with a typed error naming the path, or passed over: never opened, so nothing hangs.
 * Each case runs the CLI in a child process, so a read that waits forever fails the case (the
 * child is killed) instead of stalling the suite.
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, rename, rm, symlink, unlink } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runTsScript } from "../../helpers/child-process.js";
import { gitAt } from "../../helpers/git-cli.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { runCli } from "../../unit/cli/cli-io.js";

const tempDir = useTempDirs("wfh-nonreg-");
const cliMain = fileURLToPath(new URL("../../../src/cli/main.ts", import.meta.url));
/** A ceiling far above the second or so the CLI needs; a hung read is killed at it. */
const HANG_MS = 30_000;

async function deployment(): Promise<{ dataDir: string; gitdir: string }> {
  const dataDir = join(await tempDir(), "d");
  expect((await runCli(["repo", "create", "-d", dataDir, "-r", "p"])).code).toBe(0);
  expect((await runCli(["timer", "set", "-d", dataDir, "-r", "p", "--run", "r1", "--timer", "t1", "--fire-at", "2026-05-02T00:00:00Z"])).code).toBe(0);
  return { dataDir, gitdir: join(dataDir, "deployments", "p.git") };
}

async function replaceWithFifo(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
  execFileSync("mkfifo", [path]);
}

/** Runs `workflow-host timers --repo p` in a child: its exit code and the error code on stderr. */
async function timersIn(dataDir: string): Promise<{ code: number | null; errorCode: string | undefined; stderr: string }> {
  const run = await runTsScript(cliMain, ["timers", "-d", dataDir, "--repo", "p"], { timeoutMs: HANG_MS });
  return { code: run.code, errorCode: /^workflow-host: ([a-z_]+): /m.exec(run.stderr)?.[1], stderr: run.stderr };
}

describe("non-regular files at ref paths", () => {
  it("a FIFO at refs/heads/main is ref_corrupt naming the path, exit 1", async () => {
    const { dataDir, gitdir } = await deployment();
    const ref = join(gitdir, "refs", "heads", "main");
    await replaceWithFifo(ref);
    const run = await timersIn(dataDir);
    expect(run.code).toBe(1);
    expect(run.errorCode).toBe("ref_corrupt");
    expect(run.stderr).toContain(ref);
  });

  it("a symlink to /dev/zero at refs/heads/main is path_escapes_data_dir (a link at a file's place is never followed, so the device is never read)", async () => {
    const { dataDir, gitdir } = await deployment();
    const ref = join(gitdir, "refs", "heads", "main");
    await unlink(ref);
    await symlink("/dev/zero", ref);
    const run = await timersIn(dataDir);
    expect([run.code, run.errorCode]).toEqual([1, "path_escapes_data_dir"]);
  });

  it("a socket at refs/heads/main is ref_corrupt", async () => {
    const { dataDir, gitdir } = await deployment();
    const ref = join(gitdir, "refs", "heads", "main");
    await unlink(ref);
    const server = createServer();
    await new Promise<void>((done) => server.listen(ref, done));
    try {
      const run = await timersIn(dataDir);
      expect([run.code, run.errorCode]).toEqual([1, "ref_corrupt"]);
    } finally {
      await new Promise((done) => server.close(done));
    }
  });

  it("a FIFO as packed-refs (main packed) is ref_corrupt", async () => {
    const { dataDir, gitdir } = await deployment();
    await gitAt(gitdir, ["pack-refs", "--all"]);
    await replaceWithFifo(join(gitdir, "packed-refs"));
    const run = await timersIn(dataDir);
    expect([run.code, run.errorCode]).toEqual([1, "ref_corrupt"]);
  });

  it("a FIFO as a ref-lock holder record is passed over; a write still succeeds", async () => {
    const { dataDir, gitdir } = await deployment();
    const owner = join(gitdir, "workflow-host", "ref-locks", "refs", "heads", "main.owner");
    await mkdir(join(owner, ".."), { recursive: true });
    await replaceWithFifo(owner);
    // A crashed writer's lock makes the next writer look at the holder record.
    execFileSync("touch", ["-d", "2020-01-01", join(gitdir, "refs", "heads", "main.lock")]);
    const run = await runTsScript(cliMain, ["timer", "set", "-d", dataDir, "-r", "p", "--run", "r2", "--timer", "t", "--delay-ms", "60000"], { timeoutMs: HANG_MS });
    expect(run.code).toBe(0);
  });
});

describe("non-regular files at object paths", () => {
  it("a FIFO at the tip commit's loose object is object_corrupt naming the path", async () => {
    const { dataDir, gitdir } = await deployment();
    const packDir = join(gitdir, "objects", "pack");
    // Every object loose, no pack: the tip commit is read from its loose file.
    for (const name of readdirSync(packDir).filter((n) => n.endsWith(".pack"))) {
      const pack = readFileSync(join(packDir, name));
      await rename(join(packDir, name), join(gitdir, "..", name));
      await rm(join(packDir, name.replace(/\.pack$/, ".idx")));
      execFileSync("git", ["--git-dir", gitdir, "unpack-objects", "-q"], { input: pack });
    }
    const tip = (await readFile(join(gitdir, "refs", "heads", "main"), "utf8")).trim();
    const loose = join(gitdir, "objects", tip.slice(0, 2), tip.slice(2));
    await replaceWithFifo(loose);
    const run = await timersIn(dataDir);
    expect([run.code, run.errorCode]).toEqual([1, "object_corrupt"]);
    expect(run.stderr).toContain(loose);
  });

  for (const ext of [".idx", ".pack"]) {
    it(`a FIFO as a pack's ${ext} is object_corrupt naming the pack`, async () => {
      const { dataDir, gitdir } = await deployment();
      const packDir = join(gitdir, "objects", "pack");
      const names = readdirSync(packDir).filter((n) => n.endsWith(ext));
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) await replaceWithFifo(join(packDir, name));
      const run = await timersIn(dataDir);
      expect([run.code, run.errorCode]).toEqual([1, "object_corrupt"]);
    });
  }
});

describe("a FIFO as the host lock's holder record", () => {
  it("serve starts (the record reads as unreadable, replaced by rename) and stops on SIGTERM with exit 0", async () => {
    const { dataDir } = await deployment();
    await replaceWithFifo(join(dataDir, "host.lock.json"));
    const child = spawn(process.execPath, ["--import", "tsx", cliMain, "serve", "-d", dataDir, "--json"], { stdio: ["ignore", "pipe", "pipe"] });
    const killer = setTimeout(() => child.kill("SIGKILL"), HANG_MS);
    let out = "";
    let termSent = false;
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (!termSent && out.includes('"serving"')) {
        termSent = true;
        child.kill("SIGTERM");
      }
    });
    const code = await new Promise<number | null>((done) => child.on("close", (c) => done(c)));
    clearTimeout(killer);
    expect(out).toContain('"serving"');
    expect(code).toBe(0);
  });
});
