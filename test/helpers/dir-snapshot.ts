import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";

/**
 * Every file and folder under `dir`, in name order, with its size and mtime (and, with
 * `contents`, each file's text): what a write there would change. Links are listed, not followed.
 */
export async function dirSnapshot(dir: string, opts: { contents?: boolean } = {}): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const name of (await readdir(at)).sort()) {
      const path = join(at, name);
      const s = await lstat(path);
      const text = opts.contents === true && !s.isDirectory() ? ` ${await readFile(path, "utf8")}` : "";
      out.push(`${relative(dir, path)} ${s.isDirectory() ? "dir" : s.size} ${s.mtimeMs}${text}`);
      if (s.isDirectory()) await walk(path);
    }
  };
  await walk(dir);
  return out;
}
