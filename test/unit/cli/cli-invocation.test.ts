/**
 * The demo's closing hint names the command line that works where the demo ran: in this
 * repository `npm run cli -- …`, in a project that installed the package `npx workflow-host …`,
 * with the command on the PATH `workflow-host …`.
 */
import { describe, expect, it } from "vitest";
import { cliInvocation } from "../../../src/cli/demo/cli-invocation.js";

const SOURCE = "file:///home/ana/workflow-host/src/cli/demo/demo-main.ts";
const INSTALLED = "file:///home/ana/shop/node_modules/workflow-host/dist/src/cli/demo/demo-main.js";

describe("cliInvocation", () => {
  it("in this repository (npm start runs the sources): npm run cli --", () => {
    expect(cliInvocation({ moduleUrl: SOURCE, entryPath: "/home/ana/workflow-host/src/cli/main.ts", env: { npm_command: "start" } })).toBe("npm run cli --");
  });

  it("under npx in a project that installed it: npx workflow-host", () => {
    expect(cliInvocation({ moduleUrl: INSTALLED, entryPath: "/home/ana/shop/node_modules/.bin/workflow-host", env: { npm_command: "exec" } })).toBe("npx workflow-host");
  });

  it("from a project's own script or its node_modules/.bin: npx workflow-host", () => {
    expect(cliInvocation({ moduleUrl: INSTALLED, entryPath: "/home/ana/shop/node_modules/.bin/workflow-host", env: {} })).toBe("npx workflow-host");
  });

  it("on the PATH (a global install): workflow-host", () => {
    expect(cliInvocation({ moduleUrl: "file:///usr/lib/node_modules/workflow-host/dist/src/cli/demo/demo-main.js", entryPath: "/usr/bin/workflow-host", env: {} })).toBe("workflow-host");
  });

  it("the built code of a checkout (node bin/workflow-host.js): npm run cli --", () => {
    expect(cliInvocation({ moduleUrl: "file:///home/ana/workflow-host/dist/src/cli/demo/demo-main.js", entryPath: "/home/ana/workflow-host/bin/workflow-host.js", env: {} })).toBe("npm run cli --");
  });
});
