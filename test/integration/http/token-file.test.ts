/**
 * The library's `loadTokenFile` reads with the same bound as `serve --tokens`: a device that
 * never ends or a file far larger than any token file is refused once the bound is
 * passed, instead of being read into memory whole (`config_invalid`, as every configuration file).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTokenFile, MAX_TOKEN_FILE_BYTES } from "../../../src/http/http-tokens.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-token-file-");

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => (error as { code?: string }).code,
  );
}

describe("loadTokenFile", () => {
  it("reads a token file", async () => {
    const path = join(await tempDir(), "tokens.json");
    writeFileSync(path, JSON.stringify({ tokens: { "ops-token-0123456789": { principal: "ops", deployments: { "*": ["read"] } } } }));
    expect((await loadTokenFile(path)).principals).toEqual(["ops"]);
  });

  it("refuses a file over the bound, and an endless device, with config_invalid", async () => {
    const path = join(await tempDir(), "tokens.json");
    writeFileSync(path, Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1, 0x20));
    expect(await codeOf(loadTokenFile(path))).toBe("config_invalid");
    expect(await codeOf(loadTokenFile("/dev/zero"))).toBe("config_invalid");
  });
});
