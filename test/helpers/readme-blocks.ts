/**
 * The README's code blocks, read as they stand, so tests run what a reader copies.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const README = fileURLToPath(new URL("../../README.md", import.meta.url));

/**
 * The fenced code blocks of language `lang` in the README section whose heading is `heading`
 * (a `## ` heading, matched exactly), in order.
 * @throws Error when the section or a block of that language in it is missing
 */
export function readmeCodeBlocks(heading: string, lang: string): string[] {
  const text = readFileSync(README, "utf8");
  const sections = text.split(/^## /m);
  const section = sections.find((s) => s.startsWith(`${heading}\n`));
  if (section === undefined) throw new Error(`README has no section "## ${heading}"`);
  const blocks = [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang).map((m) => m[2] as string);
  if (blocks.length === 0) throw new Error(`README section "## ${heading}" has no \`\`\`${lang} block`);
  return blocks;
}
