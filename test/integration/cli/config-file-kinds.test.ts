/**
 * The files named by `schedule sync --file`, `serve --dispatch` and `serve --tokens` are read
 * only when they are regular files within the documented bound (64 MiB; token files 16 MiB): a
 * FIFO no one writes to (which blocked the command for good), an endless device, a folder, or a
 * file over the bound is refused before it is read: config_invalid, exit 1, for every option (a
 * file the command cannot use fails the command; exit 2 is for the command line itself). A FIFO
 * or a device is given to the real CLI in a child process (a read that regressed would block or
 * never end: a child is killed after the test, a stuck read in this process is not); every other
 * file goes to the CLI's entry in this process, which takes the same steps without the start-up of
 * a child.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CONFIG_FILE_BYTES } from "../../../src/cli/read-config-file.js";
import { loadTokenFile, MAX_TOKEN_FILE_BYTES } from "../../../src/http/http-tokens.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess, killAllChildren, runCliProcess } from "../host/cli-child.js";

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

/** The CLI for a path of `kind`: in a child process only where a read could block or never end. */
const cliFor = (kind: Kind): ((args: readonly string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>) =>
  kind === "fifo" || kind === "device" ? runCliProcess : cliInProcess;

describe("a file option given something other than a regular file within the bound", () => {
  it.each(KINDS)("schedule sync --file <%s>: config_invalid, exit 1, nothing read", async (kind) => {
    const file = await pathOf(kind, MAX_CONFIG_FILE_BYTES);
    const run = await cliFor(kind)(["schedule", "sync", "-d", await tempDir(), "-r", "dep", "--file", file, "--json"]);
    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout) as { error: { code: string } }).error.code).toBe("config_invalid");
  });

  it.each(KINDS)("serve --dispatch <%s>: config_invalid, exit 1, before the data dir is touched", async (kind) => {
    const file = await pathOf(kind, MAX_CONFIG_FILE_BYTES);
    const dataDir = join(await tempDir(), "data");
    const run = await cliFor(kind)(["serve", "-d", dataDir, "--init", "--dispatch", file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: config_invalid: /);
    expect(existsSync(dataDir)).toBe(false);
  });

  it.each(KINDS)("serve --tokens <%s>: config_invalid, exit 1, before the data dir is touched", async (kind) => {
    const file = await pathOf(kind, MAX_TOKEN_FILE_BYTES);
    const dataDir = join(await tempDir(), "data");
    const run = await cliFor(kind)(["serve", "-d", dataDir, "--init", "--http", "127.0.0.1:0", "--tokens", file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^workflow-host: config_invalid: /);
    expect(existsSync(dataDir)).toBe(false);
  });

  it.each(KINDS)("the library's loadTokenFile(<%s>): config_invalid", async (kind) => {
    const file = await pathOf(kind, MAX_TOKEN_FILE_BYTES);
    await expect(loadTokenFile(file)).rejects.toMatchObject({ code: "config_invalid" });
  });
});

describe("a file option naming a file with bad content", () => {
  // One rule for the three: the command line was right, the file it names is not (exit 1); a bad
  // flag beside a bad file is still a usage error (exit 2): flags are checked first.
  it("is config_invalid, exit 1, for schedule sync --file, serve --dispatch and serve --tokens alike", async () => {
    const root = await tempDir();
    const garbled = join(root, "garbled.json");
    await writeFile(garbled, '{"consumers": [');
    const unknownField = join(root, "unknown-field.json");
    await writeFile(unknownField, JSON.stringify({ consumers: [], tokens: {}, revoked: [] }));
    const dataDir = join(root, "data");
    const syncDir = join(root, "sync-data");
    expect((await cliInProcess(["repo", "create", "-d", syncDir, "-r", "dep"])).code).toBe(0);
    const runs: Record<string, string[]> = {
      "schedule sync --file": ["schedule", "sync", "-d", syncDir, "-r", "dep", "--file"],
      "serve --dispatch": ["serve", "-d", dataDir, "--init", "--dispatch"],
      "serve --tokens": ["serve", "-d", dataDir, "--init", "--http", "127.0.0.1:0", "--tokens"],
    };
    for (const [what, argv] of Object.entries(runs)) {
      for (const file of [garbled, unknownField]) {
        const run = await cliInProcess([...argv, file, "--json"]);
        expect({ what, file, code: run.code, error: (JSON.parse(run.stdout) as { error: { code: string } }).error.code }).toEqual({ what, file, code: 1, error: "config_invalid" });
      }
    }
    const badFlag = await cliInProcess(["serve", "-d", dataDir, "--init", "--http", "127.0.0.1:0", "--tokens", garbled, "--poll-ms", "soon"]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/^workflow-host: usage: /);
    expect(existsSync(dataDir)).toBe(false);
  });

  // JSON.parse keeps the last of a key given twice and drops the first without a word: a token
  // listed twice kept only the rights of its last entry, a series declared with two runIds went
  // to the second. A leading UTF-8 byte order mark (some Windows editors write one) was "not JSON".
  it("refuses a key given twice (config_invalid, exit 1, naming the key but never a token) and reads a file that starts with a byte order mark", async () => {
    const root = await tempDir();
    const token = "c0ffee-secret-token-0123";
    const files: Record<string, [string, string[], RegExp]> = {
      "schedule sync --file": [
        '[{"runId":"r1","timerId":"h","cron":"0 * * * *","runId":"r2"}]',
        ["schedule", "sync", "-d", join(root, "sync-data"), "-r", "dep", "--dry-run", "--file"],
        /the key "runId" is given twice in \[0\]; only the last would count/,
      ],
      "serve --dispatch": [
        '{"consumers":[{"name":"wake","url":"https://example.com/w","secretEnv":"WAKE_SECRET","filter":{"types":["TimerFired"],"types":["SignalReceived"]}}]}',
        ["serve", "-d", join(root, "data"), "--init", "--dispatch"],
        /the key "types" is given twice in consumers\[0\]\.filter; only the last would count/,
      ],
      "serve --tokens (a token twice)": [
        `{"tokens":{"${token}":{"principal":"ops","deployments":{"*":["read","write"]}},"${token}":{"principal":"viewer","deployments":{"payments":["read"]}}}}`,
        ["serve", "-d", join(root, "data"), "--init", "--http", "127.0.0.1:0", "--tokens"],
        /a token is listed twice in tokens; only its last entry would count/,
      ],
      "serve --tokens (a deployment twice)": [
        `{"tokens":{"${token}":{"principal":"ops","deployments":{"payments":["read"],"payments":["read","write"]}}}}`,
        ["serve", "-d", join(root, "data"), "--init", "--http", "127.0.0.1:0", "--tokens"],
        /the key "payments" is given twice in tokens\["<a token>"\]\.deployments; only the last would count/,
      ],
    };
    expect((await cliInProcess(["repo", "create", "-d", join(root, "sync-data"), "-r", "dep"])).code).toBe(0);
    for (const [what, [text, argv, message]] of Object.entries(files)) {
      const file = join(root, `${what.replace(/[^a-z]+/g, "-")}.json`);
      await writeFile(file, text);
      const run = await cliInProcess([...argv, file]);
      expect({ what, code: run.code, stderr: run.stderr }).toMatchObject({ what, code: 1, stderr: expect.stringMatching(/^workflow-host: config_invalid: /) });
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toContain(token);
    }
    expect(existsSync(join(root, "data"))).toBe(false);
    // A byte order mark before the JSON is skipped.
    const bom = join(root, "bom.json");
    await writeFile(bom, '\ufeff[{"runId":"r1","timerId":"h","cron":"0 * * * *"}]');
    const sync = await cliInProcess(["schedule", "sync", "-d", join(root, "sync-data"), "-r", "dep", "--dry-run", "--file", bom]);
    expect([sync.code, sync.stdout]).toEqual([0, expect.stringContaining("1 to create")]);
    const tokens = join(root, "bom-tokens.json");
    await writeFile(tokens, `\ufeff{"tokens":{"${token}":{"principal":"ops","deployments":{"*":["read"]}}}}`);
    expect((await loadTokenFile(tokens)).principals).toEqual(["ops"]);
  });
});

