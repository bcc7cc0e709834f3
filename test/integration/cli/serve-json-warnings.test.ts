/**
 * `serve --json` prints one JSON object per line on stdout and stderr (its `--help`): the
 * process's warnings too. A damaged pack is warned about as a process warning
 * (`WORKFLOW_HOST_PACK_CHECKSUM`), which Node prints as text; with `--json` it is a JSON line
 * of the logger instead. A real `serve` child on a deployment whose pack's trailer is flipped.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { killAllChildren, runCliProcess, spawnCli } from "../host/cli-child.js";

const tempDir = useTempDirs("wh-serve-json-warn-");
afterEach(() => {
  killAllChildren();
});

describe("serve --json", () => {
  it("logs a damaged pack's warning as a JSON line, and every line on stderr is JSON", async () => {
    const dataDir = join(await tempDir(), "data");
    expect((await runCliProcess(["repo", "create", "-d", dataDir, "-r", "dep"])).code).toBe(0);
    expect((await runCliProcess(["timer", "set", "-d", dataDir, "-r", "dep", "--run", "r1", "-t", "t", "--fire-at", "2099-01-01T00:00:00Z"])).code).toBe(0);
    // The last byte of each pack's trailer flipped: the pack fails its checksum (its objects
    // are still read one by one, each checked against its oid).
    const packDir = join(dataDir, "deployments", "dep.git", "objects", "pack");
    for (const name of (await readdir(packDir)).filter((n) => n.endsWith(".pack"))) {
      const bytes = await readFile(join(packDir, name));
      bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff;
      await writeFile(join(packDir, name), bytes);
    }
    const serve = spawnCli(["serve", "-d", dataDir, "--json"]);
    await serve.waitFor(/"event":"serving"/);
    await serve.waitFor(/WORKFLOW_HOST_PACK_CHECKSUM/);
    serve.kill("SIGTERM");
    expect((await serve.exited).code).toBe(0);
    const lines = serve.stderr().split("\n").filter((line) => line !== "");
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    const warned = lines.map((line) => JSON.parse(line) as { level: string; data?: { code?: string } }).filter((entry) => entry.data?.code === "WORKFLOW_HOST_PACK_CHECKSUM");
    expect(warned).toEqual([expect.objectContaining({ level: "warn" })]);
  });
});
