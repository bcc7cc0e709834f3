/**
 * createHttpHandler's own options: a body limit that is not a positive whole number of bytes is
 * config_invalid, like every other option, not fastify's FST_ERR_ROUTE_BODY_LIMIT_OPTION_NOT_INT.
 */
import { describe, expect, it } from "vitest";
import { createWorkflowHost } from "../../../src/host/host.js";
import { createHostMonitor } from "../../../src/http/host-monitor.js";
import { createHttpHandler } from "../../../src/http/http-handler.js";
import { parseTokenFile } from "../../../src/http/http-tokens.js";
import { expectCode } from "../../helpers/expect-code.js";
import { createMemFs } from "../../helpers/memfs.js";

const tokens = parseTokenFile({ tokens: { "ops-token-0123456789": { principal: "ops", deployments: { "*": ["read"] } } } });

describe("createHttpHandler options", () => {
  it.each([[-1], [0], [1.5], ["1048576"], [Number.POSITIVE_INFINITY]])("refuses bodyLimitBytes %s (config_invalid)", (bodyLimitBytes) => {
    const host = createWorkflowHost({ dataDir: "/data", fs: createMemFs(), watch: false });
    expectCode(() => createHttpHandler(host, { tokens, monitor: createHostMonitor(), bodyLimitBytes: bodyLimitBytes as number }), "config_invalid");
  });

  it("takes a positive whole number of bytes", async () => {
    const host = createWorkflowHost({ dataDir: "/data", fs: createMemFs(), watch: false });
    const app = createHttpHandler(host, { tokens, monitor: createHostMonitor(), bodyLimitBytes: 4_096 });
    await app.ready();
    await app.close();
    expect(app.initialConfig.bodyLimit).toBe(4_096);
  });
});
