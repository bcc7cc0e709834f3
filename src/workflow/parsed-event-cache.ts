/**
 * Parsed events by blob oid.
 *
 * A blob oid names its bytes forever (git's content addressing), so the event parsed from a
 * blob, read under a given seq and size limit, is the same every time. Every append re-reads
 * the run's whole log under the repo lock (a signal delivery checks its signalId against every
 * earlier one), and so does every channel start and every fire; with this cache each of those
 * parses only the events it has not seen, instead of the whole log again (JSON, schema, ids,
 * instants: ~5 µs per event, ~1 ms for a 200-event log).
 *
 * Only valid events are cached (a bad one is re-parsed and reported every time, as before).
 * Cached events are deep-frozen, since every reader of the same blob gets the same object.
 */
import { LruCache } from "../substrate/lru-cache.js";
import { DEFAULT_MAX_EVENT_BYTES, parseEvent, type EventContext } from "./events.js";
import type { RunEvent } from "./types.js";

/** Default capacity: 8 MiB of event bytes (each entry also counts {@link ENTRY_OVERHEAD_BYTES}). */
export const DEFAULT_PARSED_EVENT_CACHE_BYTES = 8 * 1024 * 1024;
/** Approximate cost of an entry beyond its bytes (key, map slot, the parsed object's shell). */
const ENTRY_OVERHEAD_BYTES = 256;

export class ParsedEventCache {
  readonly #cache: LruCache<RunEvent>;

  /** @param capacityBytes weight bound: event bytes plus a fixed overhead per entry */
  constructor(capacityBytes: number = DEFAULT_PARSED_EVENT_CACHE_BYTES) {
    this.#cache = new LruCache(capacityBytes);
  }

  /** Number of events cached. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * The event of blob `oid` as read at `expectedSeq` under `maxEventBytes`, when parsed before.
   * @param oid the blob's 40-hex oid
   */
  get(oid: string, expectedSeq: number, maxEventBytes: number | undefined): RunEvent | undefined {
    return this.#cache.get(keyOf(oid, expectedSeq, maxEventBytes));
  }

  /**
   * Parses `bytes` (the content of blob `oid`) as {@link parseEvent} does, remembering the result.
   * The caller vouches that `bytes` are the blob's content (the store checks oids on read).
   * @returns the event, deep-frozen, shared with every later reader of the same blob
   * @throws as {@link parseEvent}; nothing is cached then
   */
  parse(oid: string, bytes: Uint8Array, ctx: EventContext & { readonly expectedSeq: number }): RunEvent {
    const key = keyOf(oid, ctx.expectedSeq, ctx.maxEventBytes);
    const hit = this.#cache.get(key);
    if (hit !== undefined) return hit;
    const event = deepFreeze(parseEvent(bytes, ctx));
    this.#cache.set(key, event, bytes.byteLength + ENTRY_OVERHEAD_BYTES);
    return event;
  }

  clear(): void {
    this.#cache.clear();
  }
}

/** The cache the run-log functions use unless given another; shared by every store in the process. */
export const sharedParsedEvents = new ParsedEventCache();

function keyOf(oid: string, expectedSeq: number, maxEventBytes: number | undefined): string {
  return `${oid}:${expectedSeq}:${maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES}`;
}

/** Freezes `value` and every object in it (for parsed events shared between readers). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}
