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

/** Where a bound server answers, as `describeBoundAddress` tells it. */
export interface BoundAddress {
  /** `http://<address>:<port>`, IPv6 in brackets; a wildcard bind stays `0.0.0.0` / `[::]`. */
  readonly url: string;
  /** True when only this machine can connect (127.0.0.0/8, ::1, IPv4-mapped 127.x). */
  readonly loopbackOnly: boolean;
}

/**
 * Describes the address a server socket is bound to (`server.address()`), so what `serve` prints
 * is what listens: a wildcard bind is named `0.0.0.0` or `[::]` and said to be reachable from
 * other machines, never shown as the loopback address a client on this machine would use.
 */
export function describeBoundAddress(bound: { readonly address: string; readonly family: string | number; readonly port: number }): BoundAddress {
  const v6 = bound.family === "IPv6" || bound.family === 6 || bound.address.includes(":");
  const url = `http://${v6 ? `[${bound.address}]` : bound.address}:${bound.port}`;
  const v4 = /^(?:::ffff:)?(\d+)\.\d+\.\d+\.\d+$/i.exec(bound.address);
  const loopbackOnly = v4 !== null ? v4[1] === "127" : bound.address === "::1";
  return { url, loopbackOnly };
}
