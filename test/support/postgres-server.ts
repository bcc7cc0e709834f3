/**
 * A throw-away PostgreSQL server for integration tests and benchmarks: `initdb` + `pg_ctl` in a
 * temp dir, listening on a free loopback port, trusted local logins (user `postgres`, database
 * `postgres`). The server runs as the `postgres` system user when this process is root (initdb
 * refuses root). Binaries come from /usr/lib/postgresql/<newest>/bin, else PATH.
 */
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface PostgresServer {
  /** Connection string: postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string;
  readonly port: number;
  /** Stops the server (fast shutdown) and removes its folder when the folder was ours. */
  stop(): Promise<void>;
}

/** The folder holding initdb/pg_ctl, or null when PostgreSQL is not installed. */
export function postgresBinDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir !== "" && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  return null;
}

/** Whether {@link startPostgres} can run here. */
export function postgresAvailable(): boolean {
  return postgresBinDir() !== null;
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

function run(file: string, args: readonly string[], asPostgres: boolean): Promise<string> {
  const [cmd, argv] = asPostgres ? ["runuser", ["-u", "postgres", "--", file, ...args]] : [file, [...args]];
  return new Promise((resolve, reject) => {
    execFile(cmd, argv, { env: { ...process.env, LC_ALL: "C" } }, (error, stdout, stderr) => {
      if (error !== null) reject(new Error(`${file} ${args.join(" ")} failed: ${stderr || error.message}`));
      else resolve(stdout);
    });
  });
}

/**
 * Starts a server in `opts.dir` (a new temp dir by default) and resolves once it accepts logins.
 * @throws Error when PostgreSQL is not installed or does not start
 */
export async function startPostgres(opts: { dir?: string } = {}): Promise<PostgresServer> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on PATH)");
  const owned = opts.dir === undefined;
  // A given folder's parents must let the postgres user through (mkdtemp folders do not).
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), "workflow-host-pg-")));
  await mkdir(dir, { recursive: true });
  const asPostgres = typeof process.getuid === "function" && process.getuid() === 0;
  if (asPostgres) {
    const uid = Number((await run("id", ["-u", "postgres"], false)).trim());
    const gid = Number((await run("id", ["-g", "postgres"], false)).trim());
    await chown(dir, uid, gid);
    await chmod(dir, 0o700);
  }
  const data = join(dir, "data");
  await run(join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"], asPostgres);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  await run(join(bin, "pg_ctl"), ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "-t", "60", "start"], asPostgres);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      await run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "stop"], asPostgres).catch(() => undefined);
      if (owned) await rm(dir, { recursive: true, force: true });
    },
  };
}
