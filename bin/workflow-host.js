#!/usr/bin/env node
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// dist/ is built by `npm pack` (prepack) and by `npm run build`; an install from a git URL or from
// a clone's folder has none (the package has no prepare script): see the README.
const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  process.stderr.write(`workflow-host: not built: ${fileURLToPath(main)} is missing (installed from a git URL or a folder?): install a tarball made with \`npm pack\` in a clone, or run \`npm run build\` in ${root}\n`);
  process.exit(1);
}
const { runCli } = await import(main.href);

await runCli(process.argv.slice(2));
