/**
 * `serve --cluster` and `repo create --cluster`: flags are checked before anything starts
 * (exit 2), and single-host mode takes none of them.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "./cli-io.js";

const codeOf = (stderr: string): string | null => /^workflow-host: ([a-z_]+): /m.exec(stderr)?.[1] ?? null;

describe("cluster flags", () => {
  it.each([
    [["serve", "--data-dir", "/nonexistent", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--lease-ttl-ms", "5000"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1/db"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "mysql://u@127.0.0.1/db", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1/db", "--remote-base", "/r", "--lease-ttl-ms", "10"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1/db", "--remote-base", "/r", "--host-id", "../x"]],
    [["repo", "create", "--data-dir", "/nonexistent", "--repo", "a", "--cluster", "postgres://u@127.0.0.1/db"]],
    // A connection string that names no reachable place is refused before any connection.
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1:99999/db", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1:0/db", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@:5432/db", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@[::1/db", "--remote-base", "/r"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1:5432/db", "--remote-base", "relative/remotes"]],
    [["serve", "--data-dir", "/nonexistent", "--cluster", "postgres://u@127.0.0.1:5432/db", "--remote-base", "/r\nx"]],
    [["repo", "create", "--data-dir", "/nonexistent", "--repo", "a", "--cluster", "postgres://u@127.0.0.1:70000/db", "--remote-base", "/r"]],
    // A host name longer than DNS allows (253 characters) is not looked up.
    [["serve", "--data-dir", "/nonexistent", "--cluster", `postgres://u@${"a".repeat(100_000)}/db`, "--remote-base", "/r"]],
  ])("refuses %j with a usage error (exit 2) before touching anything", async (argv) => {
    const run = await runCli(argv);
    expect(run.code).toBe(2);
    expect(codeOf(run.stderr)).toBe("usage");
  });
});
