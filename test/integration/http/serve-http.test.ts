/**
 * `workflow-host serve --http … --tokens …` in a child process: it listens on loopback, answers
 * with the token file's rights, and stops on SIGTERM with exit 0; `--http` without `--tokens`
 * is a usage error (exit 2).
 */
import { rename, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { cliInProcess, killAllChildren, lockLeft, pollUntil, spawnCli } from "../host/cli-child.js";
import { TOKEN_FILE, ADMIN_TOKEN, PAYMENTS_TOKEN } from "./http-harness.js";

const tempDir = useTempDirs("wh-serve-http-");
afterEach(() => {
  killAllChildren();
});

/**
 * `serve --http 127.0.0.1:0 --tokens <file>` (durability none) on a data dir under a new temp
 * folder, the token file written from TOKEN_FILE; `init` adds `--init`, `before` runs once the
 * files exist and before the host starts. Resolves once it serves, with its base URL and port.
 */
async function startServe(opts: { init: boolean; before?: (dataDir: string) => Promise<void> }) {
  const root = await tempDir();
  const dataDir = join(root, "data");
  const tokens = join(root, "tokens.json");
  await writeFile(tokens, JSON.stringify(TOKEN_FILE));
  await opts.before?.(dataDir);
  const serve = spawnCli(["serve", "--data-dir", dataDir, ...(opts.init ? ["--init"] : []), "--durability", "none", "--http", "127.0.0.1:0", "--tokens", tokens]);
  const line = await serve.waitFor(/^http on http:\/\/127\.0\.0\.1:\d+ /);
  const base = /http:\/\/127\.0\.0\.1:\d+/.exec(line)?.[0] as string;
  await serve.waitFor(/^serving /);
  return { serve, dataDir, tokens, base, port: Number(/:(\d+)$/.exec(base)?.[1]) };
}

describe("workflow-host serve --http", () => {
  it("serves the API on loopback with the token file and stops on SIGTERM", async () => {
    const { serve, dataDir, base } = await startServe({
      init: false,
      before: async (dir) => {
        expect((await cliInProcess(["repo", "create", "--data-dir", dir, "--repo", "payments"])).code).toBe(0);
      },
    });
    expect((await fetch(`${base}/v1/deployments`)).status).toBe(401);
    const listed = await fetch(`${base}/v1/deployments`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(await listed.json()).toEqual({ deployments: [{ repoId: "payments", pendingTimers: 0, recovered: true }] });
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    serve.kill("SIGTERM");
    expect(await serve.exited).toEqual({ code: 0, signal: null });
    expect(lockLeft(dataDir)).toBe(false);
  });

  // The file was read once, at start: a token taken out of it went on working (and its live
  // stream on streaming) until the host was restarted.
  it("follows its token file: a token taken out is refused from then on, its live stream ends, and an invalid file changes nothing", async () => {
    const { serve, tokens, base } = await startServe({ init: true });
    const statusWith = async (token: string): Promise<number> => (await fetch(`${base}/v1/deployments`, { headers: { authorization: `Bearer ${token}` } })).status;
    expect(await statusWith(PAYMENTS_TOKEN)).toBe(200);
    const stream = await fetch(`${base}/v1/events`, { headers: { authorization: `Bearer ${PAYMENTS_TOKEN}` } });
    const ended = stream.text().then(() => "ended", () => "ended");
    // Revoked: the billing token taken out, written as editors do (a new file renamed over it).
    const { [PAYMENTS_TOKEN]: _revoked, ...kept } = TOKEN_FILE.tokens;
    await writeFile(`${tokens}.new`, JSON.stringify({ tokens: kept }));
    await rename(`${tokens}.new`, tokens);
    await pollUntil(async () => ((await statusWith(PAYMENTS_TOKEN)) === 401 ? true : undefined), 20_000, serve, 100);
    expect(await ended).toBe("ended");
    expect(await statusWith(ADMIN_TOKEN)).toBe(200);
    await serve.waitFor(/token file .* read again: 2 principals/);
    // A file that is not valid keeps the tokens in place, and says so.
    await writeFile(tokens, '{"tokens": {');
    await serve.waitFor(/token file .* changed but was not taken/, 20_000);
    expect(await statusWith(ADMIN_TOKEN)).toBe(200);
    expect(await statusWith(PAYMENTS_TOKEN)).toBe(401);
    // So does a malformed expiresAt (a date without its time and offset): the tokens in place stay.
    await writeFile(tokens, JSON.stringify({ tokens: { ...kept, [ADMIN_TOKEN]: { ...TOKEN_FILE.tokens[ADMIN_TOKEN], expiresAt: "2020-01-01" } } }));
    await serve.waitFor(/token file .* changed but was not taken.*expiresAt "2020-01-01"/, 20_000);
    expect(await statusWith(ADMIN_TOKEN)).toBe(200);
    // A valid one is taken: an expiresAt in the past ends the token at once.
    await writeFile(tokens, JSON.stringify({ tokens: { ...kept, [ADMIN_TOKEN]: { ...TOKEN_FILE.tokens[ADMIN_TOKEN], expiresAt: "2020-01-01T00:00:00Z" } } }));
    await pollUntil(async () => ((await statusWith(ADMIN_TOKEN)) === 401 ? true : undefined), 20_000, serve, 100);
    const expired = await fetch(`${base}/v1/deployments`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(await expired.json()).toEqual({ code: "token_expired", message: expect.any(String) });
    serve.kill("SIGTERM");
    expect(await serve.exited).toEqual({ code: 0, signal: null });
  });

  it("exits on SIGTERM while a client is still sending a request body, instead of waiting for it", async () => {
    const { serve, port, dataDir } = await startServe({ init: true });
    // A request whose body never completes (a slow or stuck client).
    const socket = connect(port, "127.0.0.1");
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`POST /v1/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Length: 100\r\n\r\n{"repoId"`);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.on("error", () => {});
    try {
      serve.kill("SIGTERM");
      // A ceiling far above what stopping needs, and far below the request timeout (60 s) the
      // server otherwise waited for.
      const exit = await Promise.race([serve.exited, new Promise<"still running">((resolve) => setTimeout(() => resolve("still running"), 20_000))]);
      expect(exit).toEqual({ code: 0, signal: null });
      await closed;
      expect(lockLeft(dataDir)).toBe(false);
    } finally {
      socket.destroy();
    }
  });

  it("refuses --http without --tokens and a bad --http as usage errors (exit 2), a bad token file as config_invalid (exit 1)", async () => {
    const root = await tempDir();
    const dataDir = join(root, "data");
    const noTokens = await cliInProcess(["serve", "--data-dir", dataDir, "--http", "127.0.0.1:0"]);
    expect(noTokens.code).toBe(2);
    expect(noTokens.stderr).toMatch(/^workflow-host: usage: /);
    const bad = join(root, "tokens.json");
    await writeFile(bad, JSON.stringify({ tokens: { short: { principal: "a", deployments: {} } } }));
    const badFile = await cliInProcess(["serve", "--data-dir", dataDir, "--http", "8080", "--tokens", bad]);
    expect(badFile.code).toBe(1);
    expect(badFile.stderr).toMatch(/^workflow-host: config_invalid: token file /);
    await writeFile(bad, JSON.stringify({ tokens: { [ADMIN_TOKEN]: { ...TOKEN_FILE.tokens[ADMIN_TOKEN], expiresAt: "next week" } } }));
    const badExpiry = await cliInProcess(["serve", "--data-dir", dataDir, "--http", "8080", "--tokens", bad]);
    expect(badExpiry.code).toBe(1);
    expect(badExpiry.stderr).toMatch(/^workflow-host: config_invalid: token file .*expiresAt "next week"/);
    expect(badExpiry.stderr).not.toContain(ADMIN_TOKEN);
    // The flag is checked before the file it names is read.
    const badFlag = await cliInProcess(["serve", "--data-dir", dataDir, "--http", "nowhere", "--tokens", bad]);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toMatch(/^workflow-host: usage: /);
  });
});
