/**
 * `GET /v1/events` and a client that stops reading: the server must not buffer the live feed
 * for it without bound (every fire of a burst was queued in the process's memory for as long as
 * the connection stayed open). Past MAX_UNSENT_BYTES of unsent events the stream is ended; the
 * client reconnects (the stream's `retry`) and reloads, as the dashboard does.
 */
import { EventEmitter } from "node:events";
import type { FastifyReply, FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { createHostMonitor } from "../../../src/http/host-monitor.js";
import { MAX_UNSENT_BYTES, streamLiveEvents } from "../../../src/http/live-event-stream.js";
import { createFakeClock } from "../../../src/testing/fake-clock.js";

/** A response whose client never reads: everything written stays unsent. */
function stalledResponse() {
  const res = {
    writableLength: 0,
    writableEnded: false,
    written: [] as string[],
    writeHead() {
      return res;
    },
    write(chunk: string) {
      if (res.writableEnded) throw new Error("write after end");
      res.written.push(chunk);
      res.writableLength += Buffer.byteLength(chunk);
      return false;
    },
    end() {
      res.writableEnded = true;
    },
    destroyed: false,
    destroy() {
      res.destroyed = true;
    },
  };
  return res;
}

function open(res: ReturnType<typeof stalledResponse>) {
  const clock = createFakeClock("2026-05-01T10:00:00Z");
  const monitor = createHostMonitor();
  const streams = new Set<() => void>();
  const request = { raw: new EventEmitter() } as unknown as FastifyRequest;
  const reply = { hijack() {}, raw: res } as unknown as FastifyReply;
  streamLiveEvents(request, reply, { monitor, timers: clock.timers, streams, mayRead: async () => true });
  const signal = (i: number) => monitor.recordDelivery({ repoId: "payments", runId: `order-${i}`, signalName: "approve", signalId: `s-${i}`, seq: i, duplicate: false });
  return { monitor, streams, signal };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the live feed to a client that stops reading", () => {
  it("ends the stream once the unsent events pass the limit, instead of buffering every event", async () => {
    const res = stalledResponse();
    const { streams, signal } = open(res);
    expect(streams.size).toBe(1);
    // Far more than the limit: each event is about 200 bytes.
    const events = Math.ceil((4 * MAX_UNSENT_BYTES) / 150);
    for (let i = 0; i < events; i += 1) signal(i);
    await settle();
    expect(res.writableEnded).toBe(true);
    expect(res.destroyed).toBe(true);
    expect(streams.size).toBe(0);
    expect(res.writableLength).toBeLessThanOrEqual(MAX_UNSENT_BYTES + 1_024);
    const written = res.written.length;
    signal(events);
    await settle();
    expect(res.written.length).toBe(written);
  });

  it("keeps streaming to a client that reads", async () => {
    const res = stalledResponse();
    const { signal } = open(res);
    for (let i = 0; i < 1_000; i += 1) {
      signal(i);
      await settle();
      res.writableLength = 0; // the client took everything
    }
    expect(res.writableEnded).toBe(false);
    expect(res.destroyed).toBe(false);
    expect(res.written.filter((c) => c.startsWith("event: signal")).length).toBe(1_000);
  });
});
