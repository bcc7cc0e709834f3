/**
 * `--http` addresses: `PORT`, `HOST:PORT` or `[IPv6]:PORT`. A bare port listens on 127.0.0.1:
 * the host is reachable from other machines only when an address says so.
 */
import { WorkflowHostError } from "../errors.js";

export interface ListenAddress {
  readonly host: string;
  /** 0 … 65535 (0: any free port). */
  readonly port: number;
}

/**
 * Parses a listen address.
 * @throws usage for anything but PORT, HOST:PORT, [IPV6]:PORT with a port in 0 … 65535
 */
export function parseListenAddress(value: string): ListenAddress {
  const text = value.trim();
  const match = /^\d{1,5}$/.test(text) ? [text, "127.0.0.1", text] : (/^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(text) ?? /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(text));
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || match[1] === undefined || !Number.isInteger(port) || port > 65_535) {
    throw new WorkflowHostError("usage", `--http ${JSON.stringify(value)} is not PORT, HOST:PORT or [IPV6]:PORT (port 0 … 65535)`, { value });
  }
  return { host: match[1], port };
}
