/**
 * `initRepo` (`repo create`, `createDeployment`) makes a repository only in a folder that is
 * absent, empty, or a repository of ours (a layout it began): never inside someone's files.
 */
import { describe, expect, it } from "vitest";
import { isWorkflowHostError } from "../../../src/errors.js";
import { createMemStore, DATA_DIR, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isWorkflowHostError(error)) return error.code;
    throw error;
  }
  return "none";
}

describe("initRepo into an existing folder", () => {
  it("refuses a folder holding files that are not a repository (path_violation), writing nothing there", async () => {
    const { store, fs } = createMemStore();
    fs.mkdirSync(GITDIR, { recursive: true });
    fs.writeFileSync(`${GITDIR}/notes.txt`, "mine");
    expect(await codeOf(store.initRepo(null, REPO))).toBe("path_violation");
    expect((fs.readdirSync(GITDIR) as string[]).sort()).toEqual(["notes.txt"]);
  });

  it("refuses a file where the repository's folder would be (path_violation)", async () => {
    const { store, fs } = createMemStore();
    fs.mkdirSync(`${DATA_DIR}/deployments`, { recursive: true });
    fs.writeFileSync(GITDIR, "not a folder");
    expect(await codeOf(store.initRepo(null, REPO))).toBe("path_violation");
  });

  it("creates the repository in an empty folder, in one it began, and again in its own", async () => {
    const { store, fs } = createMemStore();
    fs.mkdirSync(GITDIR, { recursive: true });
    expect((await store.initRepo(null, REPO)).created).toBe(true);
    expect((await store.initRepo(null, REPO)).created).toBe(false);
    // A creation cut short before HEAD was written is completed.
    const other = createMemStore();
    other.fs.mkdirSync(`${GITDIR}/objects/info`, { recursive: true });
    other.fs.mkdirSync(`${GITDIR}/refs/heads`, { recursive: true });
    expect((await other.store.initRepo(null, REPO)).created).toBe(true);
  });
});
