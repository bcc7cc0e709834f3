/**
 * A throwaway PostgreSQL server on loopback: `initdb` into a temp folder and `pg_ctl start` on a
 * free port, stopped and removed by `stop()`. Binaries are looked for in
 * /usr/lib/postgresql/<version>/bin (newest first), then on PATH. initdb refuses to run as
 * root, so when this process is root the server runs as the `postgres` user (`runuser`), in a
 * folder handed to that user. Trust authentication, listening on 127.0.0.1 only.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown) and removes its folder (unless `dir` was given). */
  stop(): Promise<void>;
}

/** The folder holding `initdb` and `pg_ctl`, or null when PostgreSQL is not installed. */
export function findPostgresBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir !== "" && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  return null;
}

function run(file: string, args: readonly string[], asPostgres: boolean): Promise<string> {
  const [cmd, argv] = asPostgres ? ["runuser", ["-u", "postgres", "--", file, ...args]] : [file, [...args]];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv as string[], { timeout: 120_000 }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${file} ${args.join(" ")} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a PostgreSQL server on a free loopback port.
 * @param opts.dir folder to hold the cluster (created by the caller, must be empty); default a
 *   new temp folder, removed by `stop()`
 * @throws when PostgreSQL is not installed (see {@link findPostgresBin}) or does not start
 */
export async function startPostgres(opts: { dir?: string } = {}): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (bin === null) throw new Error("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH)");
  const asPostgres = userInfo().uid === 0;
  const base = opts.dir ?? (await mkdtemp(join(tmpdir(), "workflow-host-pg-")));
  const data = join(base, "data");
  const log = join(base, "postgres.log");
  if (asPostgres) {
    const ids = (await run("id", ["-u", "postgres"], false)).trim();
    const gid = (await run("id", ["-g", "postgres"], false)).trim();
    await chown(base, Number(ids), Number(gid));
    await chmod(base, 0o700);
  }
  await run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"], asPostgres);
  const port = await freePort();
  const conf = [`listen_addresses = '127.0.0.1'`, `port = ${port}`, `unix_socket_directories = '${base}'`, "fsync = on", "max_connections = 100"].join("\n");
  await run("sh", ["-c", `cat >> '${join(data, "postgresql.conf")}' <<'EOF'\n${conf}\nEOF`], asPostgres);
  await run(join(bin, "pg_ctl"), ["-D", data, "-l", log, "-w", "-t", "60", "start"], asPostgres);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (stopped) return;
      stopped = true;
      await run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"], asPostgres).catch(() => undefined);
      if (opts.dir === undefined) await rm(base, { recursive: true, force: true });
    },
  };
}
