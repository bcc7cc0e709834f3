/** The git substrate's public surface (docs/design.md §4). */
export { createRepoStore } from "./repo-store.js";
export { allowAll } from "./allow-all.js";
export type {
  Authorize,
  CommitChange,
  CommittedReads,
  DeltaResult,
  DirEntry,
  EntryType,
  FolderAppend,
  KindHandler,
  Oid,
  PathChange,
  Principal,
  PushContext,
  RepoAction,
  RepoId,
  RepoStore,
  RepoStoreOptions,
  SubscribeFrom,
  SubscribeOptions,
  TimerApi,
  TreeDelta,
  WriteResult,
  WriteTreeDeltaOptions,
  WriteTreeOptions,
  WriteTreePreservingPrefixOptions,
} from "./types.js";
