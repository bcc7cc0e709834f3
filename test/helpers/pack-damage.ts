/**
 * Damage done to a pack on disk by tests of damaged repositories, located with git's own
 * listing of the pack (`git verify-pack -v`), as a person repairing one would.
 */
import { open } from "node:fs/promises";
import { git } from "./git-cli.js";

/** One entry of a pack as `git verify-pack -v` lists it. */
export interface PackListingEntry {
  readonly oid: string;
  readonly type: string;
  readonly sizeInPack: number;
  readonly offset: number;
  /** The oid of its delta base, when it is a delta. */
  readonly base?: string;
}

/** Every entry of the pack at `packPath` (`.pack`, its `.idx` beside it), in pack order. */
export async function packListing(packPath: string): Promise<PackListingEntry[]> {
  const listing = await git(["verify-pack", "-v", packPath.replace(/\.pack$/, ".idx")]);
  const entries: PackListingEntry[] = [];
  for (const line of listing.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (!/^[0-9a-f]{40}$/.test(fields[0] ?? "") || fields.length < 5) continue;
    const [oid, type, , sizeInPack, offset, , base] = fields as [string, string, string, string, string, string?, string?];
    entries.push({ oid, type, sizeInPack: Number(sizeInPack), offset: Number(offset), ...(base === undefined ? {} : { base }) });
  }
  return entries.sort((a, b) => a.offset - b.offset);
}

/**
 * Flips one byte inside `oid`'s entry of the pack, `fromEnd` bytes before the entry's end (by
 * default 6: in its deflated data, before the stream's Adler-32); returns a function putting the
 * byte back.
 */
export async function flipInPack(packPath: string, oid: string, fromEnd = 6): Promise<() => Promise<void>> {
  const entry = (await packListing(packPath)).find((e) => e.oid === oid);
  if (entry === undefined) throw new Error(`${oid} is not in ${packPath}`);
  const at = entry.offset + entry.sizeInPack - fromEnd;
  const handle = await open(packPath, "r+");
  try {
    const one = Buffer.alloc(1);
    await handle.read(one, 0, 1, at);
    const original = one[0] as number;
    await handle.write(Buffer.from([original ^ 0x5a]), 0, 1, at);
    return async () => {
      const h = await open(packPath, "r+");
      await h.write(Buffer.from([original]), 0, 1, at);
      await h.close();
    };
  } finally {
    await handle.close();
  }
}
