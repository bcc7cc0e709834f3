/**
 * The public test kit (`workflow-host/testing`, docs/design.md §7): a FakeClock, a repo store on
 * memfs, and a builder that commits a fixture folder into a deployment repo.
 */
export { createFakeClock, type FakeClock, type FakeClockOptions } from "./fake-clock.js";
export {
  createMemoryRepoStore,
  type MemoryFs,
  type MemoryRepoStore,
  type MemoryRepoStoreOptions,
} from "./memory-store.js";
export {
  FIXTURE_MANIFEST,
  buildFixtureRepo,
  readFixtureFolder,
  type BuildFixtureRepoOptions,
  type FixtureFiles,
} from "./fixture-repo.js";
