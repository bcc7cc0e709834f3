/**
 * The files named by `schedule sync --file`, `serve --dispatch` and `serve --tokens` are read
 * only when they are regular files within the documented bound (64 MiB; token files 16 MiB): a
 * FIFO no one writes to (which blocked the command for good), an endless device, a folder, or a
 * file over the bound is refused before it is read, with the code each option uses for a file it
 * cannot take. Each runs the real CLI in a child process.
 */
import { execFileSync } from "node:child_process";
import { mkdir, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CONFIG_FILE_BYTES } from "../../../src/cli/read-config-file.js";
import { loadTokenFile, MAX_TOKEN_FILE_BYTES } from "../../../src/http/http-tokens.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { killAllChildren, runCliProcess } from "../host/cli-child.js";

const tempDir = useTempDirs("wfh-cli-file-kinds-");
afterEach(killAllChildren);

type Kind = "fifo" | "device" | "folder" | "over the bound";

/** A path of the given kind; `bound` is the option's largest file (bytes). */
async function pathOf(kind: Kind, bound: number): Promise<string> {
  const root = await tempDir();
  switch (kind) {
    case "fifo": {
      const path = join(root, "file.json");
      execFileSync("mkfifo", [path]);
      return path;
    }
    case "device":
      return "/dev/zero";
    case "folder": {
      const path = join(root, "file.json");
      await mkdir(path);
      return path;
    }
    case "over the bound": {
      // Sparse: the size is what is refused, nothing is read.
      const path = join(root, "file.json");
      await writeFile(path, "");
      await truncate(path, bound + 1);
      return path;
    }
  }
}

const KINDS: Kind[] = ["fifo", "device", "folder", "over the bound"];

describe("a file option given something other than a regular file within the bound", () => {
  it.each(KINDS)("schedule sync --file <%s>: config_invalid, exit 1, nothing read", async (kind) => {
    const file = await pathOf(kind, MAX_CONFIG_FILE_BYTES);
    const run = await runCliProcess(["schedule", "sync", "-d", await tempDir(), "-r", "dep", "--file", file, "--json"]);
    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe("config_invalid");
  });

  it.each(KINDS)("serve --dispatch <%s>: usage, exit 2, before the data dir is touched", async (kind) => {
    const file = await pathOf(kind, MAX_CONFIG_FILE_BYTES);
    const run = await runCliProcess(["serve", "-d", await tempDir(), "--dispatch", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^workflow-host: usage: /);
  });

  it.each(KINDS)("serve --tokens <%s>: usage, exit 2, before the data dir is touched", async (kind) => {
    const file = await pathOf(kind, MAX_TOKEN_FILE_BYTES);
    const run = await runCliProcess(["serve", "-d", await tempDir(), "--http", "127.0.0.1:0", "--tokens", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^workflow-host: usage: /);
  });

  it.each(KINDS)("the library's loadTokenFile(<%s>): usage", async (kind) => {
    const file = await pathOf(kind, MAX_TOKEN_FILE_BYTES);
    await expect(loadTokenFile(file)).rejects.toMatchObject({ code: "usage" });
  });
});
