/**
 * Buffers the write engine owns for big folders' content (a fire commit's `runs/`), reused from
 * commit to commit instead of allocated (design notes §80).
 *
 * Why: each fire commit makes a new version of `runs/` (370 KB at 10,000 runs). A new buffer
 * per commit is a new ArrayBuffer, and V8 counts ArrayBuffer bytes allocated since the last
 * mark-compact against the old generation's limit: at ~110 commits a second that started a
 * full collection every 200–500 ms (7–19 ms pauses), which the slowest fires waited on.
 *
 * The ownership rule. A version's bytes live in a {@link TreeBuffer} taken from the pool; they
 * are reachable in exactly two ways:
 * - the version's parsed tree (tree-object.ts), which never hands them out: `ParsedTree.content`
 *   of an owned tree is a copy, made on first ask (from the buffer while it still holds the
 *   version, else rebuilt from the tree's entries), and only the next edit of the folder
 *   (tree-splice.ts) reads the owned bytes, synchronously, while {@link isCurrent} holds;
 * - the version's git object (made when it is hashed), which goes to the commit's pack write and
 *   nowhere else: the object store counts it in {@link startWrite} until the pack's bytes are
 *   written or dropped (pack-store.ts `StagedObjects.settled`).
 * A buffer goes back to the pool only when its version was staged, every write of it settled, and
 * the object store dropped the version from its recent big trees ({@link retire}): then no edit
 * starts from it and no write reads it. Taking it again bumps its generation, which every
 * holder of the old version checks. A version that never gets there (an attempt that lost its
 * race, a write never staged) is not reused at all: its buffer is collected as any other.
 */

/** One owned buffer; its current version is the one of generation {@link generation}. */
export class TreeBuffer {
  /** Bumped each time the buffer is taken for a new version. */
  generation = 0;
  /** Pack writes of the current version not settled yet. */
  writes = 0;
  /** Whether a pack write of the current version was started. */
  staged = false;
  /** Whether the object store dropped the current version from its recent big trees. */
  retired = false;

  constructor(readonly bytes: Buffer) {}
}

/** One version's bytes: a view of `slot`, valid while the slot's generation is `generation`. */
export interface OwnedContent {
  readonly slot: TreeBuffer;
  readonly generation: number;
  readonly view: Buffer;
}

/** Free buffers kept at most; the oldest beyond go to the garbage collector. */
const FREE_MAX = 8;
/** Free bytes kept at most (a 100,000-run folder is 3.8 MB). */
const FREE_BYTES_MAX = 48 * 1024 * 1024;
/** Room a new buffer gets past its first version (1/32): a folder that grows by a few runs still fits. */
const SLACK_SHIFT = 5;
/** A free buffer is taken for a version that fills at least this share of it (then 1/1.25). */
const MAX_WASTE = 1.25;

const free: TreeBuffer[] = [];
let freeBytes = 0;
const byView = new WeakMap<Uint8Array, OwnedContent>();
const stats = { allocated: 0, reused: 0, freed: 0, copied: 0, rebuilt: 0 };

/**
 * A buffer for a new version of `size` bytes: a free one that fits (never `avoid`'s, the version
 * being edited), else a new one with some room to grow.
 */
export function takeTreeBuffer(size: number, avoid?: OwnedContent): OwnedContent {
  let slot: TreeBuffer | undefined;
  for (let i = free.length - 1; i >= 0; i--) {
    const candidate = free[i] as TreeBuffer;
    const capacity = candidate.bytes.length;
    if (capacity < size || capacity > size * MAX_WASTE || candidate === avoid?.slot) continue;
    free.splice(i, 1);
    freeBytes -= capacity;
    slot = candidate;
    stats.reused++;
    break;
  }
  if (slot === undefined) {
    slot = new TreeBuffer(Buffer.allocUnsafeSlow(size + (size >>> SLACK_SHIFT)));
    stats.allocated++;
  }
  slot.generation++;
  slot.writes = 0;
  slot.staged = false;
  slot.retired = false;
  const owned: OwnedContent = { slot, generation: slot.generation, view: slot.bytes.subarray(0, size) };
  byView.set(owned.view, owned);
  return owned;
}

/** Whether `owned`'s buffer still holds its version. */
export function isCurrent(owned: OwnedContent): boolean {
  return owned.slot.generation === owned.generation;
}

/**
 * Counts a pack write of `content` when it is an owned version's bytes (see the module comment).
 * @returns the call that ends it (call once, when the write settled), or undefined for other bytes
 */
export function startWrite(content: Uint8Array): (() => void) | undefined {
  const owned = byView.get(content);
  if (owned === undefined || !isCurrent(owned)) return undefined;
  const slot = owned.slot;
  // A version retired before this write (never so in the commit path): not free while it runs.
  const at = free.indexOf(slot);
  if (at >= 0) {
    free.splice(at, 1);
    freeBytes -= slot.bytes.length;
  }
  slot.writes++;
  slot.staged = true;
  return () => {
    // The generation cannot have moved: a buffer with writes in flight is never free.
    slot.writes--;
    freeIfDone(slot);
  };
}

/** The object store no longer keeps this version among its recent big trees. */
export function retire(owned: OwnedContent): void {
  if (!isCurrent(owned)) return;
  owned.slot.retired = true;
  freeIfDone(owned.slot);
}

function freeIfDone(slot: TreeBuffer): void {
  if (!slot.retired || !slot.staged || slot.writes > 0 || free.includes(slot)) return;
  free.push(slot);
  freeBytes += slot.bytes.length;
  stats.freed++;
  while (free.length > FREE_MAX || freeBytes > FREE_BYTES_MAX) freeBytes -= (free.shift() as TreeBuffer).bytes.length;
}

/** Counts a copy handed out for an owned version (`rebuilt`: written again from its entries). */
export function countCopy(rebuilt: boolean): void {
  if (rebuilt) stats.rebuilt++;
  else stats.copied++;
}

/**
 * Buffers allocated, taken again from the pool and given back to it so far, and copies handed
 * out (from the owned bytes, or rebuilt from entries): for tests and profiles.
 */
export function treeBufferStats(): { readonly allocated: number; readonly reused: number; readonly freed: number; readonly copied: number; readonly rebuilt: number } {
  return { ...stats };
}
