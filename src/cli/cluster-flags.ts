/**
 * Checks of the cluster-mode flags (`--cluster URL`, `--remote-base URL`) shared by `serve` and
 * `repo create`: made before anything starts, so a malformed value is a usage error (exit 2),
 * never a connection attempt that fails later as cluster_unavailable (exit 1).
 */
import { isAbsolute } from "node:path";
import { usageError } from "./args.js";

/**
 * A PostgreSQL connection string: `postgres://` or `postgresql://`, a host, and a port (when
 * given) in 1-65535.
 * @returns the URL unchanged
 * @throws usage when it is not one
 */
export function checkClusterUrl(command: string, url: string): string {
  const shape = "--cluster takes a PostgreSQL connection string postgres://user@host:port/db";
  if (!/^postgres(ql)?:\/\//.test(url)) throw usageError(command, shape);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usageError(command, `${shape}; ${JSON.stringify(redact(url))} is not a URL`);
  }
  if (parsed.hostname === "") throw usageError(command, `${shape}; it names no host`);
  // A DNS name is at most 253 characters (RFC 1035): a longer one is a mistake, refused before a lookup.
  if (parsed.hostname.length > 253) throw usageError(command, `${shape}; its host is ${parsed.hostname.length} characters long (at most 253)`);
  // URL keeps a port of 0 as "0"; a port beyond 65535 does not parse at all (above).
  if (parsed.port === "0") throw usageError(command, `${shape}; port 0 is not a port (1-65535)`);
  return url;
}

/**
 * Where the deployments' git remotes live: an absolute path, or a file://, ssh://, git://,
 * http:// or https:// URL, or git's scp form (`user@host:path`). A relative path is refused:
 * git runs in other folders than the one it was typed in.
 * @returns the value unchanged
 * @throws usage for an empty, relative or multi-line value
 */
export function checkRemoteBase(command: string, remoteBase: string): string {
  if (remoteBase === "" || /[\0\r\n]/.test(remoteBase)) throw usageError(command, "--remote-base takes one path or URL on one line");
  const url = /^(file|ssh|git|https?):\/\//.test(remoteBase);
  const scp = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:/.test(remoteBase);
  if (!url && !scp && !isAbsolute(remoteBase)) {
    throw usageError(command, `--remote-base takes an absolute path or a file://, ssh://, git://, http(s):// URL; got ${JSON.stringify(remoteBase)}`);
  }
  return remoteBase;
}

/** The URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/(\/\/[^:/@]*):[^@/]*@/, "$1:***@");
}
