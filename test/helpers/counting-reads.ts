/** Committed reads that report what a caller asked of them, for tests that bound a read's cost. */
import type { CommittedReads } from "../../src/substrate/types.js";

/** Called on each ask: a folder listed (its path), blobs read (how many in the one call), a folder read as bytes. */
export interface ReadObserver {
  readonly listed?: (path: string) => void;
  readonly blobs?: (count: number) => void;
  /** `false` leaves `readTreeBytes` out, so callers take the listing path; absent forwards it unobserved. */
  readonly treeBytes?: (() => void) | false;
}

/** `reads` with each call reported to `observe` first. */
export function countingReads(reads: CommittedReads, observe: ReadObserver): CommittedReads {
  const { readBlobsByOid, readTreeBytes } = reads;
  const { treeBytes } = observe;
  return {
    commitSha: reads.commitSha,
    listDir: async (path) => {
      observe.listed?.(path);
      return reads.listDir(path);
    },
    readBlob: (path) => reads.readBlob(path),
    readBlobByOid: async (oid) => {
      observe.blobs?.(1);
      return reads.readBlobByOid(oid);
    },
    ...(readBlobsByOid === undefined
      ? {}
      : {
          readBlobsByOid: async (oids: readonly string[]) => {
            observe.blobs?.(oids.length);
            return readBlobsByOid(oids);
          },
        }),
    treeOid: (path) => reads.treeOid(path),
    ...(readTreeBytes === undefined || treeBytes === false
      ? {}
      : {
          readTreeBytes: async (oid: string) => {
            treeBytes?.();
            return readTreeBytes(oid);
          },
        }),
  };
}
