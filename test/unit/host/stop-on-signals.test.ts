import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { stopOnSignals, type SignalSource } from "../../../src/host/stop-on-signals.js";

function fakeProcess(): SignalSource & { emit(signal: NodeJS.Signals): void; count(): number } {
  const emitter = new EventEmitter();
  return {
    on: (signal, listener) => emitter.on(signal, listener),
    off: (signal, listener) => emitter.off(signal, listener),
    emit: (signal) => emitter.emit(signal, signal),
    count: () => emitter.listenerCount("SIGINT") + emitter.listenerCount("SIGTERM"),
  };
}

function fakeHost(): { stop(): Promise<void>; calls: number; finish(): void } {
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const host = {
    calls: 0,
    stop() {
      host.calls += 1;
      return done;
    },
    finish: () => finish(),
  };
  return host;
}

describe("stopOnSignals", () => {
  it("stops the host on SIGTERM, resolves with the signal once stop() is done, and removes its listeners", async () => {
    const source = fakeProcess();
    const host = fakeHost();
    const handle = stopOnSignals(host, { source });
    expect(source.count()).toBe(2);
    expect(handle.received).toBeNull();
    source.emit("SIGTERM");
    expect(host.calls).toBe(1);
    expect(handle.received).toBe("SIGTERM");
    host.finish();
    await expect(handle.stopped).resolves.toBe("SIGTERM");
    expect(source.count()).toBe(0);
  });

  it("calls stop() once; a repeated signal while stopping goes to onRepeat", async () => {
    const source = fakeProcess();
    const host = fakeHost();
    const repeats: string[] = [];
    const handle = stopOnSignals(host, { source, onRepeat: (signal) => repeats.push(signal) });
    source.emit("SIGINT");
    source.emit("SIGINT");
    expect(host.calls).toBe(1);
    expect(repeats).toEqual(["SIGINT"]);
    host.finish();
    await expect(handle.stopped).resolves.toBe("SIGINT");
  });

  it("does nothing after dispose()", () => {
    const source = fakeProcess();
    const host = fakeHost();
    const handle = stopOnSignals(host, { source });
    handle.dispose();
    handle.dispose();
    expect(source.count()).toBe(0);
    source.emit("SIGTERM");
    expect(host.calls).toBe(0);
  });
});
