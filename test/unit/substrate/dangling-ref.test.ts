import { describe, expect, it } from "vitest";
import { createMemStore, GITDIR, REPO } from "../../helpers/memfs-repo-store.js";

describe("a dangling ref", () => {
  it("is ref_corrupt that names the missing object (its value is a well-formed id)", async () => {
    const { store, fs } = createMemStore();
    await store.initRepo(null, REPO);
    const missing = "0123456789abcdef0123456789abcdef01234567";
    fs.writeFileSync(`${GITDIR}/refs/heads/main`, `${missing}\n`);
    const error = await store.resolveRef(null, REPO, "main").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "ref_corrupt", data: { ref: "refs/heads/main", missingObject: missing } });
    await store.close();
  });
});
