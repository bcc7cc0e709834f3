#!/usr/bin/env node
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// dist/ is built by `npm pack` (prepack) and by `npm run build`; a clone's folder installed as it
// is (`npm i ../workflow-host`, a link) has none until it is built.
const main = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(main)) {
  const root = fileURLToPath(new URL("..", import.meta.url));
  process.stderr.write(`workflow-host: not built: ${fileURLToPath(main)} is missing; run \`npm run build\` in ${root}\n`);
  process.exit(1);
}
const { runCli } = await import(main.href);

await runCli(process.argv.slice(2));
