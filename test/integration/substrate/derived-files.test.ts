/**
 * Derived files on real disk: what is at a derived file's path is read only when it is a
 * regular file of sane size. A FIFO, a device or an endless file there (a mistake or a hostile
 * data dir) reads as absent, so the index is re-derived, instead of hanging the reader on the
 * open or filling memory.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { DERIVED_DIR_NAME, readDerivedFile, writeDerivedFile } from "../../../src/substrate/derived-files.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-derived-");
const fs = createFsAdapter();

async function gitdirWithDerivedDir(): Promise<string> {
  const gitdir = join(await tempDir(), "d.git");
  mkdirSync(join(gitdir, DERIVED_DIR_NAME), { recursive: true });
  return gitdir;
}

describe("readDerivedFile on real disk", () => {
  it("reads back what it wrote", async () => {
    const gitdir = await gitdirWithDerivedDir();
    await writeDerivedFile(fs, gitdir, "index", new TextEncoder().encode("hello"), true);
    expect(new TextDecoder().decode((await readDerivedFile(fs, gitdir, "index")) ?? new Uint8Array())).toBe("hello");
  });

  it("reads a FIFO at the path as absent, without opening it (an open would wait for a writer forever)", async () => {
    const gitdir = await gitdirWithDerivedDir();
    execFileSync("mkfifo", [join(gitdir, DERIVED_DIR_NAME, "index")]);
    expect(await readDerivedFile(fs, gitdir, "index")).toBeNull();
    // Writing replaces it with a regular file.
    await writeDerivedFile(fs, gitdir, "index", new Uint8Array([1, 2, 3]), false);
    expect([...((await readDerivedFile(fs, gitdir, "index")) ?? [])]).toEqual([1, 2, 3]);
  });

  it("moves a directory at the path aside when writing, keeping what it held, and says where", async () => {
    const gitdir = await gitdirWithDerivedDir();
    mkdirSync(join(gitdir, DERIVED_DIR_NAME, "index", "inner"), { recursive: true });
    writeFileSync(join(gitdir, DERIVED_DIR_NAME, "index", "inner", "kept"), "x");
    expect(await readDerivedFile(fs, gitdir, "index")).toBeNull();
    const displaced = await writeDerivedFile(fs, gitdir, "index", new Uint8Array([4, 5]), false);
    expect([...((await readDerivedFile(fs, gitdir, "index")) ?? [])]).toEqual([4, 5]);
    expect(displaced).not.toBeNull();
    expect(readFileSync(join(displaced as string, "inner", "kept"), "utf8")).toBe("x");
    // The next write finds a regular file: nothing is moved.
    expect(await writeDerivedFile(fs, gitdir, "index", new Uint8Array([6]), false)).toBeNull();
  });

  it("reads a link to an endless device as absent instead of reading it into memory", async () => {
    const gitdir = await gitdirWithDerivedDir();
    symlinkSync("/dev/zero", join(gitdir, DERIVED_DIR_NAME, "index"));
    expect(await readDerivedFile(fs, gitdir, "index")).toBeNull();
  });

  it("reads a file over the size limit as absent", async () => {
    const gitdir = await gitdirWithDerivedDir();
    writeFileSync(join(gitdir, DERIVED_DIR_NAME, "index"), Buffer.alloc(64));
    expect(await readDerivedFile(fs, gitdir, "index", { maxBytes: 32 })).toBeNull();
  });
});
