/**
 * A small file swapped for a FIFO between the moment it is looked at and the moment it is read
 * must not be opened as a FIFO (a blocking open waits for a writer forever; through the
 * blocking adapter that stops the whole event loop). The read opens the path first, without
 * blocking, and looks at what it opened (fstat of the descriptor), so what it reads is what it
 * looked at. The module below swaps the file for a FIFO right after the first call on it, and
 * refuses, as "would hang", any blocking open or whole-file read of a FIFO.
 */
import { execFileSync } from "node:child_process";
import * as nodeFs from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readBoundedFileOrNull } from "../../../src/substrate/bounded-file.js";
import { createBlockingFsAdapter, createFsAdapter } from "../../../src/substrate/fs-adapter.js";
import { useTempDirs } from "../../helpers/temp-dir.js";

const tempDir = useTempDirs("wfh-fifo-swap-");

function isFifo(path: string): boolean {
  try {
    return nodeFs.lstatSync(path).isFIFO();
  } catch {
    return false;
  }
}

/** node:fs, but `target` becomes a FIFO right after the first call that names it. */
function swappingFs(target: string): unknown {
  let swapped = false;
  const after = <T>(path: unknown, value: T): T => {
    if (!swapped && path === target) {
      swapped = true;
      nodeFs.rmSync(target);
      execFileSync("mkfifo", [target]);
    }
    return value;
  };
  const wouldHang = (path: unknown, flags?: unknown): void => {
    const nonBlocking = typeof flags === "number" && (flags & nodeFs.constants.O_NONBLOCK) !== 0;
    if (typeof path === "string" && isFifo(path) && !nonBlocking) throw Object.assign(new Error(`would hang: a blocking open of the FIFO ${path}`), { code: "EWOULDHANG" });
  };
  const calls = (source: Record<string, unknown>, wrapped: Record<string, unknown>): Record<string, unknown> =>
    new Proxy(source, {
      get(t, key) {
        if (typeof key === "string" && key in wrapped) return wrapped[key];
        const value = Reflect.get(t, key) as unknown;
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      },
    });
  const p = nodeFs.promises;
  const promises = calls(p as unknown as Record<string, unknown>, {
    stat: async (path: string) => after(path, await p.stat(path)),
    readFile: async (path: string) => (wouldHang(path), after(path, await p.readFile(path))),
    open: async (path: string, flags?: string | number, mode?: number) => (wouldHang(path, flags), after(path, await p.open(path, flags, mode))),
  });
  return calls(nodeFs as unknown as Record<string, unknown>, {
    promises,
    statSync: (path: string) => after(path, nodeFs.statSync(path)),
    readFileSync: (path: string) => (wouldHang(path), after(path, nodeFs.readFileSync(path))),
    openSync: (path: string, flags?: string | number, mode?: number) => (wouldHang(path, flags), after(path, nodeFs.openSync(path, flags ?? "r", mode))),
  });
}

describe("a file swapped for a FIFO while it is read", () => {
  it.each([
    ["promise adapter", (m: unknown) => createFsAdapter(m)],
    ["blocking adapter", (m: unknown) => createBlockingFsAdapter(m)],
  ] as const)("through the %s: reads what was opened, never opens the FIFO", async (_name, make) => {
    const path = join(await tempDir(), "ref");
    nodeFs.writeFileSync(path, "0123456789abcdef0123456789abcdef01234567\n");
    const adapter = make(swappingFs(path));
    const bytes = await readBoundedFileOrNull(adapter, path, 8 * 1024, (found) => Object.assign(new Error(found), { code: "refused" }));
    expect(Buffer.from(bytes ?? new Uint8Array()).toString("utf8")).toBe("0123456789abcdef0123456789abcdef01234567\n");
    expect(isFifo(path)).toBe(true);
    // Read again: the FIFO is now what is there, refused unread.
    const again = await readBoundedFileOrNull(adapter, path, 8 * 1024, (found) => Object.assign(new Error(found), { code: "refused" })).catch((e: unknown) => e);
    expect((again as { code?: string }).code).toBe("refused");
  });
});
