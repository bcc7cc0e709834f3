import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { errorCodeOf, runCliInProcess } from "../reliability/cli-in-process.js";

const tempDir = useTempDirs("wh-cli-io-");

describe("a file-system failure on the command line", () => {
  it("is one typed line, workflow-host: io_failed: …, and exit 1", async () => {
    const root = await tempDir();
    // A regular file where the data dir's deployments/ folder should be: every mkdir under it is
    // ENOTDIR. (A data dir below a file is a wrong path instead: data_dir_not_found.)
    const dataDir = join(root, "data");
    await mkdir(dataDir);
    await writeFile(join(dataDir, "deployments"), "");
    const created = await runCliInProcess(["repo", "create", "--data-dir", dataDir, "--repo", "r"]);
    expect({ code: created.code, error: errorCodeOf(created.stderr), lines: created.stderr.trim().split("\n").length }).toEqual({ code: 1, error: "io_failed", lines: 1 });
  });
});
