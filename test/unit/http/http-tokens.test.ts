/**
 * Token files: their shape is checked when read, each token grants what the file says on the
 * deployments it names, and `--http` addresses default to loopback.
 */
import { describe, expect, it } from "vitest";
import { errorReply, HTTP_STATUS_BY_CODE } from "../../../src/http/http-errors.js";
import { parseTokenFile, principalExpiresAtMs } from "../../../src/http/http-tokens.js";
import { parseListenAddress } from "../../../src/http/listen-address.js";
import { WorkflowHostError } from "../../../src/errors.js";
import { expectCode } from "../../helpers/expect-code.js";

const kind = "workflow-run";
const FILE = {
  tokens: {
    "ops-token-0123456789": { principal: "ops", deployments: { "*": ["read", "write"] } },
    "billing-token-0123456789": { principal: "billing", deployments: { payments: ["read", "write"], shipping: ["read"] } },
  },
};

describe("parseTokenFile", () => {
  it("grants each token what the file names, on the deployments it names", async () => {
    const auth = parseTokenFile(FILE);
    const billing = await auth.authenticate("billing-token-0123456789");
    const ops = await auth.authenticate("ops-token-0123456789");
    expect(await auth.authenticate("billing-token-012345678")).toBeNull();
    expect(auth.authorize(billing, { kind, id: "payments" }, "refs/heads/main", "write")).toBe(true);
    expect(auth.authorize(billing, { kind, id: "shipping" }, "refs/heads/main", "read")).toBe(true);
    expect(auth.authorize(billing, { kind, id: "shipping" }, "refs/heads/main", "write")).toBe(false);
    expect(auth.authorize(billing, { kind, id: "other" }, "refs/heads/main", "read")).toBe(false);
    expect(auth.authorize(billing, { kind, id: "*" }, null, "read")).toBe(false);
    expect(auth.authorize(ops, { kind, id: "*" }, null, "read")).toBe(true);
    expect(auth.authorize(ops, { kind, id: "anything" }, "refs/heads/main", "init")).toBe(true);
    expect(auth.authorize("ops", { kind, id: "anything" }, "refs/heads/main", "read")).toBe(false);
    expect(auth.principals).toEqual(["ops", "billing"]);
  });

  it("refuses files of the wrong shape with config_invalid", () => {
    for (const bad of [
      null,
      [],
      { tokens: [] },
      { tokens: { short: { principal: "a", deployments: {} } } },
      { tokens: { "has spaces in it 0123": { principal: "a", deployments: {} } } },
      { tokens: { "long-enough-token-01": { principal: "", deployments: {} } } },
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { "../x": ["read"] } } } },
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { payments: ["admin"] } } } },
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { payments: "read" } } } },
    ]) {
      expectCode(() => parseTokenFile(bad), "config_invalid");
    }
  });

  it("refuses a field it does not take (config_invalid), which would look like a restriction and restrict nothing", () => {
    for (const bad of [
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { "*": ["read", "write"] }, readOnly: true } } },
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { "*": ["read"] }, expires: "2026-01-01T00:00:00Z" } } },
      { tokens: { "long-enough-token-01": { principal: "a", deployments: { "*": ["read"] } } }, revoked: ["long-enough-token-01"] },
    ]) {
      expectCode(() => parseTokenFile(bad), "config_invalid");
    }
  });
});

describe("a token's expiresAt", () => {
  const withExpiry = (expiresAt: unknown) => ({ tokens: { "long-enough-token-01": { principal: "a", deployments: { "*": ["read"] }, expiresAt } } });

  it("is read as an instant (any offset) onto the token's principal; a token without it never expires", async () => {
    const auth = parseTokenFile({ tokens: { ...FILE.tokens, ...withExpiry("2026-07-01T02:00:00+02:00").tokens } });
    const expiring = await auth.authenticate("long-enough-token-01");
    expect(principalExpiresAtMs(expiring)).toBe(Date.parse("2026-07-01T00:00:00Z"));
    expect(principalExpiresAtMs(await auth.authenticate("ops-token-0123456789"))).toBeNull();
    expect(principalExpiresAtMs("ops")).toBeNull();
    expect(principalExpiresAtMs({ name: "own", expiresAtMs: Number.NaN })).toBeNull();
  });

  it("makes the file invalid (config_invalid) when malformed, naming neither the token nor taking a date without its time or offset", () => {
    for (const expiresAt of ["tomorrow", "2026-07-01", "2026-07-01T00:00:00", "2026-13-01T00:00:00Z", "", 1_782_864_000_000, null, true]) {
      let caught: unknown;
      try {
        parseTokenFile(withExpiry(expiresAt));
      } catch (error) {
        caught = error;
      }
      expect(caught, String(expiresAt)).toMatchObject({ name: "WorkflowHostError", code: "config_invalid" });
      expect((caught as Error).message).toContain("expiresAt");
      expect((caught as Error).message).not.toContain("long-enough-token-01");
    }
  });
});

describe("parseListenAddress", () => {
  it("reads PORT as loopback, HOST:PORT and [IPV6]:PORT", () => {
    expect(parseListenAddress("8080")).toEqual({ host: "127.0.0.1", port: 8080 });
    expect(parseListenAddress("0.0.0.0:9000")).toEqual({ host: "0.0.0.0", port: 9000 });
    expect(parseListenAddress("localhost:0")).toEqual({ host: "localhost", port: 0 });
    expect(parseListenAddress("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    for (const bad of ["", "host", "host:", ":80", "1.2.3.4:65536", "a b:80", "http://x:80"]) expectCode(() => parseListenAddress(bad), "usage");
  });
});

describe("errorReply", () => {
  it("keeps a WorkflowHostError's code with its status, and hides anything else behind internal", () => {
    expect(errorReply(new WorkflowHostError("repo_not_found", "gone"))).toMatchObject({ status: 404, body: { code: "repo_not_found" } });
    const hidden = errorReply(new Error("secret detail at /srv/x.ts:12"));
    expect(hidden).toMatchObject({ status: 500, body: { code: "internal" }, unexpected: true });
    expect(hidden.body.message).not.toContain("secret");
    expect(errorReply(Object.assign(new Error("too big"), { statusCode: 413, code: "FST_ERR_CTP_BODY_TOO_LARGE" })).status).toBe(413);
    expect(HTTP_STATUS_BY_CODE.run_not_found).toBe(404);
  });

  it("answers a server-side failure (500) with its code and a message naming no server path, logged in full", () => {
    for (const code of ["ref_corrupt", "io_failed", "object_corrupt", "ref_rewound", "data_dir_not_found", "delivery_failed", "kind_unknown"] as const) {
      expect(HTTP_STATUS_BY_CODE[code]).toBe(500);
      const answer = errorReply(new WorkflowHostError(code, "ref /srv/wfh/deployments/pay.git/refs/heads/main: EIO reading C:\\data\\x", { path: "/srv/wfh" }));
      expect(answer).toMatchObject({ status: 500, body: { code }, unexpected: true });
      expect(answer.body.message).not.toMatch(/srv|wfh|deployments|[/\\]/);
    }
  });
});
