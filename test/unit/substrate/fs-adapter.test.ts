/**
 * The fs adapters, on a real temp folder and on memfs: the promise adapter, the blocking one
 * (synchronous calls whose promises settle on a later turn of the event loop), and the
 * fallback from the blocking one to the promise one for a module without the sync calls.
 */
import * as nodeFs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFsFromVolume, Volume } from "memfs";
import { afterEach, describe, expect, it } from "vitest";
import { BLOCKING_STRETCH_MS, createBlockingFsAdapter, createFsAdapter, errnoCode, type FsAdapter } from "../../../src/substrate/fs-adapter.js";
import { createFakeClock, type FakeClock } from "../../../src/testing/fake-clock.js";

/** The bits of a node:fs-like module the tests themselves use to look behind the adapter. */
interface PeekFs {
  existsSync(path: string): boolean;
  readFileSync(path: string): Uint8Array;
  writeFileSync(path: string, data: Uint8Array | string): void;
  statSync(path: string): { ino: number | bigint };
}

interface Setup {
  readonly adapter: FsAdapter;
  readonly dir: string;
  readonly peek: PeekFs;
  readonly module: unknown;
  readonly isNodeFs: boolean;
  /** The clock the blocking adapter measures its stretches on (unused by the others). */
  readonly clock: FakeClock;
}

/** A FakeClock for one adapter: its wall clock is the adapter's monotonic time (see `later`). */
const fakeClock = (): FakeClock => createFakeClock("2026-01-01T00:00:00Z");

/** Moves the clock `ms` on without firing anything or giving the event loop a turn. */
function later(clock: FakeClock, ms: number): void {
  clock.jump(new Date(clock.now() + ms).toISOString());
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "fs-adapter-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function memfs(): ReturnType<typeof createFsFromVolume> {
  const fs = createFsFromVolume(new Volume());
  fs.mkdirSync("/work", { recursive: true });
  return fs;
}

/**
 * `fair`: a loop of awaited calls lets timers run. Not so for memfs's own promise API, which
 * settles within the same turn of the event loop (memfs's doing, not the adapter's).
 */
const flavours: {
  readonly name: string;
  readonly fair: boolean;
  /** Whether calls are made synchronously (the blocking flavour on a module with sync calls). */
  readonly blocking: boolean;
  readonly setup: () => Promise<Setup>;
}[] = [
  {
    name: "blocking, node:fs (default)",
    fair: true,
    blocking: true,
    setup: async () => {
      const clock = fakeClock();
      return { adapter: createBlockingFsAdapter(undefined, { monotonicNow: clock.now }), dir: await tempDir(), peek: nodeFs, module: nodeFs, isNodeFs: true, clock };
    },
  },
  {
    name: "promise, node:fs (default)",
    fair: true,
    blocking: false,
    setup: async () => ({ adapter: createFsAdapter(), dir: await tempDir(), peek: nodeFs, module: nodeFs, isNodeFs: true, clock: fakeClock() }),
  },
  {
    name: "blocking over a module with promises only (falls back)",
    fair: true,
    blocking: false,
    setup: async () => {
      const module = { promises: nodeFs.promises };
      const clock = fakeClock();
      return { adapter: createBlockingFsAdapter(module, { monotonicNow: clock.now }), dir: await tempDir(), peek: nodeFs, module, isNodeFs: false, clock };
    },
  },
  {
    name: "blocking, memfs",
    fair: true,
    blocking: true,
    setup: async () => {
      const fs = memfs();
      const clock = fakeClock();
      return { adapter: createBlockingFsAdapter(fs, { monotonicNow: clock.now }), dir: "/work", peek: fs as unknown as PeekFs, module: fs, isNodeFs: false, clock };
    },
  },
  {
    name: "promise, memfs",
    fair: false,
    blocking: false,
    setup: async () => {
      const fs = memfs();
      return { adapter: createFsAdapter(fs), dir: "/work", peek: fs as unknown as PeekFs, module: fs, isNodeFs: false, clock: fakeClock() };
    },
  },
];

/** The errno code a promise rejects with, or "resolved". */
async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return errnoCode(error);
  }
  return "resolved";
}

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (data: Uint8Array | null): string | null => (data === null ? null : new TextDecoder().decode(data));

describe.each(flavours)("fs adapter: $name", ({ setup, fair, blocking }) => {
  it("knows its module", async () => {
    const { adapter, module, isNodeFs } = await setup();
    expect(adapter.raw).toBe(module);
    expect(adapter.isNodeFs).toBe(isNodeFs);
  });

  it("reads a file's bytes, or null when it is missing", async () => {
    const { adapter, dir, peek } = await setup();
    const path = join(dir, "a.txt");
    const data = new Uint8Array([0, 1, 2, 250, 255, 10]);
    peek.writeFileSync(path, data);
    const read = await adapter.readFileOrNull(path);
    expect(read).not.toBeNull();
    expect([...(read as Uint8Array)]).toEqual([...data]);
    expect([...(await adapter.readFile(path))]).toEqual([...data]);
    expect(await adapter.readFileOrNull(join(dir, "missing.txt"))).toBeNull();
    expect(await adapter.readFileOrNull(join(dir, "no-dir", "missing.txt"))).toBeNull();
    // A path through a file is missing too (ENOTDIR).
    expect(await adapter.readFileOrNull(join(path, "below"))).toBeNull();
    expect(await codeOf(adapter.readFile(join(dir, "missing.txt")))).toBe("ENOENT");
  });

  it("writes a new file, and refuses to overwrite one with EEXIST", async () => {
    const { adapter, dir, peek } = await setup();
    const path = join(dir, "new.txt");
    await adapter.writeNewFile(path, bytes("first"), false);
    expect(text(peek.readFileSync(path))).toBe("first");
    expect(await codeOf(adapter.writeNewFile(path, bytes("second"), false))).toBe("EEXIST");
    expect(await codeOf(adapter.writeNewFile(path, bytes("third"), true))).toBe("EEXIST");
    expect(text(peek.readFileSync(path))).toBe("first");
    // Flushed on request.
    const synced = join(dir, "synced.txt");
    await adapter.writeNewFile(synced, bytes("flushed"), true);
    expect(text(await adapter.readFileOrNull(synced))).toBe("flushed");
    // An empty file is a file.
    await adapter.writeNewFile(join(dir, "empty"), new Uint8Array(0), false);
    expect(await adapter.readFileOrNull(join(dir, "empty"))).toHaveLength(0);
    expect(await codeOf(adapter.writeNewFile(join(dir, "no-dir", "x"), bytes("x"), false))).toBe("ENOENT");
  });

  it("writes a new file from pieces, one after another, flushed or not", async () => {
    const { adapter, dir, peek } = await setup();
    const big = Buffer.alloc(300_000, 7);
    for (const sync of [false, true]) {
      const path = join(dir, `pieces-${sync}`);
      await adapter.writeNewFile(path, [bytes("head:"), big.subarray(0, 100_000), new Uint8Array(0), big.subarray(100_000), bytes(":tail")], sync);
      const back = Buffer.from(peek.readFileSync(path));
      expect(back.length).toBe(300_010);
      expect(back.subarray(0, 5).toString()).toBe("head:");
      expect(back.subarray(5, 300_005).equals(big)).toBe(true);
      expect(back.subarray(300_005).toString()).toBe(":tail");
      expect(await codeOf(adapter.writeNewFile(path, [bytes("again")], sync))).toBe("EEXIST");
    }
  });

  it("opens a new file with wx, writes, stats and closes it", async () => {
    const { adapter, dir, peek } = await setup();
    const path = join(dir, "handle.txt");
    const handle = await adapter.open(path, "wx");
    await handle.write(bytes("hello "));
    await handle.write(bytes("world"));
    await handle.sync();
    const stat = await handle.stat();
    expect(Number(stat.size)).toBe(11);
    expect(stat.isFile()).toBe(true);
    expect(stat.isDirectory()).toBe(false);
    await handle.close();
    const byPath = await adapter.statOrNull(path);
    expect(byPath).not.toBeNull();
    expect(byPath?.ino).toBe(stat.ino);
    expect(byPath?.ino).toBe(peek.statSync(path).ino);
    expect(Number(byPath?.size)).toBe(11);
    expect(text(await adapter.readFileOrNull(path))).toBe("hello world");
    expect(await codeOf(adapter.open(path, "wx"))).toBe("EEXIST");
    expect(await codeOf(adapter.open(join(dir, "missing"), "r"))).toBe("ENOENT");
    // Reading through a handle.
    const reader = await adapter.open(path, "r");
    const buffer = new Uint8Array(5);
    const { bytesRead } = await reader.read(buffer, 0, 5, 6);
    expect(bytesRead).toBe(5);
    expect(text(buffer)).toBe("world");
    await reader.close();
    expect(text(await adapter.readRange(path, 2, 7))).toBe("llo wor");
    expect(text(await adapter.readRange(path, 8, 100))).toBe("rld");
  });

  it("renames, removes quietly, makes folders and lists them", async () => {
    const { adapter, dir, peek } = await setup();
    const from = join(dir, "from.txt");
    const to = join(dir, "to.txt");
    peek.writeFileSync(from, "moved");
    await adapter.rename(from, to);
    expect(await adapter.readFileOrNull(from)).toBeNull();
    expect(text(await adapter.readFileOrNull(to))).toBe("moved");
    // A rename replaces the target.
    peek.writeFileSync(from, "newer");
    await adapter.rename(from, to);
    expect(text(await adapter.readFileOrNull(to))).toBe("newer");
    expect(await codeOf(adapter.rename(join(dir, "missing"), to))).toBe("ENOENT");

    await adapter.unlinkQuiet(to);
    expect(peek.existsSync(to)).toBe(false);
    await adapter.unlinkQuiet(to);
    await adapter.unlinkQuiet(join(dir, "never-was"));

    const nested = join(dir, "a", "b", "c");
    await adapter.mkdirp(nested);
    await adapter.mkdirp(nested);
    expect((await adapter.statOrNull(nested))?.isDirectory()).toBe(true);
    expect(await adapter.statOrNull(join(dir, "a", "missing"))).toBeNull();

    for (const name of ["z.txt", "m.txt", "a.txt"]) peek.writeFileSync(join(nested, name), name);
    expect((await adapter.readdirOrEmpty(nested)).sort()).toEqual(["a.txt", "m.txt", "z.txt"]);
    expect(await adapter.readdirOrEmpty(join(dir, "a"))).toEqual(["b"]);
    expect(await adapter.readdirOrEmpty(join(dir, "missing"))).toEqual([]);
    expect(await adapter.readdirOrEmpty(join(nested, "a.txt"))).toEqual([]);
    await adapter.fsyncDir(nested);
    await adapter.fsyncDir(join(dir, "missing"));
  });

  it.runIf(fair)("lets the event loop turn while a caller loops on its calls", async () => {
    const { adapter, dir, peek, clock } = await setup();
    const path = join(dir, "spin.txt");
    peek.writeFileSync(path, "x");
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    let calls = 0;
    while (!turned && calls < 100) {
      await adapter.readFileOrNull(path);
      calls++;
      // Each call takes a quarter of the stretch by the adapter's clock.
      if (calls % 4 === 0) later(clock, BLOCKING_STRETCH_MS);
    }
    expect(turned).toBe(true);
    expect(calls).toBeLessThanOrEqual(blocking ? 5 : 1);
  });

  it.runIf(blocking)("holds the event loop for one stretch by its clock, then gives it a turn", async () => {
    const { adapter, dir, peek, clock } = await setup();
    const path = join(dir, "stretch.txt");
    peek.writeFileSync(path, "x");
    await new Promise((resolve) => setImmediate(resolve));
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    for (let i = 0; i < 20; i++) await adapter.readFileOrNull(path);
    // However long the calls took in real time: the clock did not move.
    expect(turned).toBe(false);
    later(clock, BLOCKING_STRETCH_MS);
    await adapter.readFileOrNull(path);
    expect(turned).toBe(true);
  });

  it("makes a blocking call at once and settles its promise only after the caller's code", async () => {
    const { adapter, dir, peek } = await setup();
    const path = join(dir, "later.txt");
    peek.writeFileSync(path, "later");
    const log: string[] = [];
    const taken = join(dir, "taken.txt");
    peek.writeFileSync(taken, "taken");
    const read = adapter.readFileOrNull(path).then(() => log.push("read"));
    const failed = adapter.writeNewFile(taken, bytes("x"), false).catch((error: unknown) => log.push(`failed ${errnoCode(error)}`));
    const renamed = join(dir, "renamed.txt");
    const rename = adapter.rename(path, renamed).then(() => log.push("renamed"));
    // The blocking flavour has already made the rename; the promise flavour has not settled yet.
    if (blocking) expect(peek.existsSync(renamed)).toBe(true);
    expect(log).toEqual([]);
    await Promise.all([read, failed, rename]);
    expect(log.sort()).toEqual(["failed EEXIST", "read", "renamed"]);
  });

  it.runIf(blocking)("lets two chains of blocking calls looping side by side take turns", async () => {
    const { adapter, dir, peek, clock } = await setup();
    const path = join(dir, "shared.txt");
    peek.writeFileSync(path, "x");
    const order: string[] = [];
    const loop = async (name: string): Promise<void> => {
      for (let i = 0; i < 100; i++) {
        await adapter.readFileOrNull(path);
        order.push(name);
        // Every call takes half the stretch by the adapter's clock.
        if (order.length % 2 === 0) later(clock, BLOCKING_STRETCH_MS);
      }
    };
    await Promise.all([loop("a"), loop("b")]);
    // Turn by turn, neither gets more than a stretch's worth of calls before the other's next
    // one; a chain that kept the stretch for itself would make all of its calls first.
    let longest = 0;
    let run = 0;
    order.forEach((name, i) => {
      run = i > 0 && order[i - 1] === name ? run + 1 : 1;
      if (order.indexOf("a") < i && order.indexOf("b") < i && order.lastIndexOf(name === "a" ? "b" : "a") > i) longest = Math.max(longest, run);
    });
    expect(longest).toBeLessThanOrEqual(3);
  });

  it.runIf(blocking)("settles a short chain of blocking calls without waiting for a turn of the event loop", async () => {
    const { adapter, dir, peek } = await setup();
    const path = join(dir, "chain.txt");
    peek.writeFileSync(path, "x");
    await new Promise((resolve) => setImmediate(resolve));
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await adapter.readFileOrNull(path);
    await adapter.rename(path, `${path}.b`);
    await adapter.rename(`${path}.b`, path);
    expect(turned).toBe(false);
  });
});

describe("the blocking adapter's fallback", () => {
  it("is the promise adapter when any sync call is missing", async () => {
    const dir = await tempDir();
    const path = join(dir, "f.txt");
    // Every sync call but one, each of which must not be used.
    const forbidden = (): never => {
      throw new Error("a sync call was made");
    };
    const module: Record<string, unknown> = { promises: nodeFs.promises };
    for (const name of ["readFileSync", "openSync", "writeSync", "readSync", "fstatSync", "closeSync", "renameSync", "unlinkSync", "mkdirSync", "statSync", "readdirSync"]) {
      module[name] = forbidden;
    }
    const adapter = createBlockingFsAdapter(module);
    expect(adapter.raw).toBe(module);
    await adapter.writeNewFile(path, bytes("via promises"), true);
    expect(text(await adapter.readFileOrNull(path))).toBe("via promises");
    expect(await adapter.readdirOrEmpty(dir)).toEqual(["f.txt"]);
    expect((await adapter.statOrNull(path))?.isFile()).toBe(true);
    await adapter.rename(path, `${path}.2`);
    await adapter.unlinkQuiet(`${path}.2`);
    expect(await adapter.readdirOrEmpty(dir)).toEqual([]);
  });

  it("refuses a module without the promise API", () => {
    expect(() => createFsAdapter({})).toThrow(TypeError);
    expect(() => createBlockingFsAdapter({ readFileSync: nodeFs.readFileSync })).toThrow(TypeError);
  });
});

describe("errnoCode", () => {
  it("reads a node-style code and nothing else", () => {
    expect(errnoCode(Object.assign(new Error("x"), { code: "EEXIST" }))).toBe("EEXIST");
    expect(errnoCode({ code: 17 })).toBeUndefined();
    expect(errnoCode(new Error("no code"))).toBeUndefined();
    expect(errnoCode(null)).toBeUndefined();
    expect(errnoCode("ENOENT")).toBeUndefined();
  });
});
