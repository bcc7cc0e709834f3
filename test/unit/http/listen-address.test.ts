/**
 * What `serve --http` says it listens on: the address the socket is bound to, not the first
 * address fastify picks to print. A wildcard address (0.0.0.0, ::) is named as such and said to
 * be reachable from other machines; loopback addresses are not.
 */
import { describe, expect, it } from "vitest";
import { describeBoundAddress } from "../../../src/http/listen-address.js";

describe("describeBoundAddress", () => {
  it("names a wildcard IPv4 bind as 0.0.0.0, reachable from other machines, never as 127.0.0.1", () => {
    const bound = describeBoundAddress({ address: "0.0.0.0", family: "IPv4", port: 8080 });
    expect(bound.url).toBe("http://0.0.0.0:8080");
    expect(bound.loopbackOnly).toBe(false);
  });

  it("names a wildcard IPv6 bind in brackets, reachable from other machines", () => {
    expect(describeBoundAddress({ address: "::", family: "IPv6", port: 9 })).toEqual({ url: "http://[::]:9", loopbackOnly: false });
  });

  it("keeps loopback binds loopback-only (127.0.0.0/8, ::1, IPv4-mapped 127.x)", () => {
    expect(describeBoundAddress({ address: "127.0.0.1", family: "IPv4", port: 8080 })).toEqual({ url: "http://127.0.0.1:8080", loopbackOnly: true });
    expect(describeBoundAddress({ address: "127.3.4.5", family: "IPv4", port: 1 }).loopbackOnly).toBe(true);
    expect(describeBoundAddress({ address: "::1", family: "IPv6", port: 1 })).toEqual({ url: "http://[::1]:1", loopbackOnly: true });
    expect(describeBoundAddress({ address: "::ffff:127.0.0.1", family: "IPv6", port: 1 }).loopbackOnly).toBe(true);
  });

  it("says a bind to one of the machine's network addresses is reachable from other machines", () => {
    expect(describeBoundAddress({ address: "10.1.2.3", family: "IPv4", port: 80 })).toEqual({ url: "http://10.1.2.3:80", loopbackOnly: false });
  });
});
