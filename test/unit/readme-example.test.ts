/**
 * The README's "Testing your workflows" example, extracted from the README as it stands and
 * run as this file's own test: its `it(...)` registers here when the extracted module is
 * imported. `workflow-host` resolves to the sources (vitest.config.ts), so if this fails the
 * README shows code that does not work.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { readmeCodeBlocks } from "../helpers/readme-blocks.js";

const [example] = readmeCodeBlocks("Testing your workflows", "ts");
// Inside the repository, so the package aliases and the TypeScript transform apply to it.
const folder = fileURLToPath(new URL("../../.vitest-tmp/", import.meta.url));
const file = `${folder}readme-testing-example-${process.pid}.ts`;
mkdirSync(folder, { recursive: true });
writeFileSync(file, example ?? "");
await import(file);
