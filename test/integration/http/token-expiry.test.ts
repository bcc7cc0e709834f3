/**
 * A token file entry's `expiresAt`: the token is served until that instant by the handler's
 * clock (a fake one here: no sleeping), then refused with 401 `token_expired` and nothing more
 * about it; a live stream opened with it ends at that instant, one opened with another token
 * goes on.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseTokenFile } from "../../../src/http/http-tokens.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";
import { useTempDirs } from "../../helpers/temp-dir.js";
import { ADMIN_TOKEN, startHttpHarness, TOKEN_FILE, type HttpHarness } from "./http-harness.js";

const tempDir = useTempDirs("wfh-token-expiry-");
const TEMP_TOKEN = "contractor-token-0123456789";
/** 11:00Z, written with another offset: the instant counts, not the text. */
const EXPIRES_AT = "2026-05-01T12:00:00+01:00";
const MIN = 60_000;
let h: HttpHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Reads an event stream until `done(text)` or its end; resolves with what it read and whether it ended. */
async function readStream(response: Response, done: (text: string) => boolean): Promise<{ text: string; ended: boolean }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) return { text, ended: true };
    text += decoder.decode(chunk.value, { stream: true });
    if (done(text)) {
      await reader.cancel();
      return { text, ended: false };
    }
  }
}

describe("a token with expiresAt", () => {
  it("is served before the instant and refused from it on (401 token_expired, nothing else said); its live stream ends then, another token's goes on", async () => {
    const clock = createFakeClock("2026-05-01T10:00:00Z");
    const tokens = parseTokenFile({ tokens: { ...TOKEN_FILE.tokens, [TEMP_TOKEN]: { principal: "contractor", deployments: { payments: ["read"] }, expiresAt: EXPIRES_AT } } });
    h = await startHttpHarness(await tempDir(), ["payments"], { tokens, clock: clock.clock, timers: clock.timers });
    const harness = h;
    const get = (token: string) => harness.request("/v1/deployments/payments/timers", { token });

    expect((await get(TEMP_TOKEN)).status).toBe(200);
    const tempStream = await harness.request("/v1/events", { token: TEMP_TOKEN });
    const adminStream = await harness.request("/v1/events", { token: ADMIN_TOKEN });
    expect([tempStream.status, adminStream.status]).toEqual([200, 200]);
    const tempRead = readStream(tempStream, () => false);

    await clock.advance(60 * MIN - 1); // 10:59:59.999Z: one ms before
    expect((await get(TEMP_TOKEN)).status).toBe(200);
    await clock.advance(1); // 11:00:00.000Z
    const refused = await get(TEMP_TOKEN);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const body = (await refused.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(["code", "message"]);
    expect(body["code"]).toBe("token_expired");
    // Not whose token it was, nor since when.
    expect(JSON.stringify(body)).not.toMatch(/contractor|2026|11:00|12:00/);
    expect((await get(ADMIN_TOKEN)).status).toBe(200);

    // The stream opened with it ended at the instant, saying why.
    const temp = await tempRead;
    expect(temp.ended).toBe(true);
    expect(temp.text).toMatch(/event: error\ndata: \{"code":"token_expired","message":"the token has expired"\}\n\n$/);
    // The other stream goes on: it gets the next live event.
    const wake = await harness.request("/v1/wake", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ repoId: "payments", runId: "order-1", signalId: "w-1" }) });
    expect(wake.status).toBe(200);
    const admin = await readStream(adminStream, (text) => text.includes("w-1"));
    expect(admin.ended).toBe(false);
  });

  it("ends a stream at expiry by its events too, when the wall clock jumps past it without the timers firing", async () => {
    const clock = createFakeClock("2026-05-01T10:00:00Z");
    const tokens = parseTokenFile({ tokens: { ...TOKEN_FILE.tokens, [TEMP_TOKEN]: { principal: "contractor", deployments: { "*": ["read"] }, expiresAt: EXPIRES_AT } } });
    h = await startHttpHarness(await tempDir(), ["payments"], { tokens, clock: clock.clock, timers: clock.timers });
    const stream = await h.request("/v1/events", { token: TEMP_TOKEN });
    const read = readStream(stream, () => false);
    clock.jump("2026-05-01T11:30:00Z");
    // An event after the jump is not sent: the stream ends instead.
    expect((await h.request("/v1/wake", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ repoId: "payments", runId: "order-2", signalId: "w-2" }) })).status).toBe(200);
    const text = (await read).text;
    expect(text).not.toContain("w-2");
    expect(text).toContain('"code":"token_expired"');
    expect((await h.request("/v1/deployments", { token: TEMP_TOKEN })).status).toBe(401);
  });
});
