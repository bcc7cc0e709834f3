import { describe, expect, it } from "vitest";
import { parseDispatchConfig } from "../../../seams/dispatch/dispatch-config.js";
import { backoffDelayMs, checkConsumer, idempotencyKey } from "../../../seams/dispatch/dispatch-keys.js";

const code = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return (error as { code?: unknown }).code;
  }
  return "no error";
};

describe("serve --dispatch config", () => {
  const one = (extra: Record<string, unknown>): string => JSON.stringify({ consumers: [{ name: "wake", url: "http://127.0.0.1:9/", ...extra }] });

  it("reads HTTP consumers, taking the secret from the environment variable secretEnv names", () => {
    const [consumer] = parseDispatchConfig(one({ secretEnv: "S", backoff: [5, 10], filter: { types: ["TimerFired"] } }), { S: "0123456789abcdef" });
    expect(consumer).toMatchObject({ name: "wake", http: { url: "http://127.0.0.1:9/", secret: "0123456789abcdef" }, backoff: [5, 10] });
  });

  it("refuses bad JSON, unknown fields, an unset secret variable, a short secret and a name given twice with config_invalid", () => {
    expect(code(() => parseDispatchConfig("{", {}))).toBe("config_invalid");
    expect(code(() => parseDispatchConfig(JSON.stringify({ consumers: [] }), {}))).toBe("config_invalid");
    expect(code(() => parseDispatchConfig(one({ secret: "0123456789abcdef", handler: "x" }), {}))).toBe("config_invalid");
    expect(code(() => parseDispatchConfig(one({ secretEnv: "MISSING" }), {}))).toBe("config_invalid");
    expect(code(() => parseDispatchConfig(one({ secret: "short" }), {}))).toBe("config_invalid");
    expect(code(() => parseDispatchConfig(one({ secret: "0123456789abcdef", name: "../x" }), {}))).toBe("id_invalid");
    const twice = JSON.stringify({ consumers: [1, 2].map(() => ({ name: "same", url: "http://127.0.0.1:9/", secret: "0123456789abcdef" })) });
    expect(code(() => parseDispatchConfig(twice, {}))).toBe("config_invalid");
  });
});

describe("a consumer's filter and backoff with a misspelt or mistyped field", () => {
  const secret = "0123456789abcdef";
  const one = (extra: Record<string, unknown>): string => JSON.stringify({ consumers: [{ name: "wake", url: "http://127.0.0.1:9/", secret, ...extra }] });

  it("refuses them with config_invalid, in the consumers file and in the library, never widening what is delivered", () => {
    // `type` for `types` handed every event of every deployment to the consumer; `repoIds` as a
    // string threw a TypeError; `maxMS` for `maxMs` kept the default delays.
    const cases: Record<string, unknown>[] = [
      { filter: { type: ["TimerFired"] } },
      { filter: { types: ["TimerFired"], repoId: ["payments"] } },
      { filter: { repoIds: "payments" } },
      { filter: { runIds: 7 } },
      { filter: ["TimerFired"] },
      { backoff: { type: "exponential", maxMS: 60_000 } },
    ];
    for (const extra of cases) {
      expect({ extra, code: code(() => parseDispatchConfig(one(extra), {})) }).toEqual({ extra, code: "config_invalid" });
      expect({ extra, code: code(() => checkConsumer({ name: "wake", handler: async () => {}, ...extra } as never)) }).toEqual({ extra, code: "config_invalid" });
    }
    const field = (() => {
      try {
        parseDispatchConfig(one({ filter: { type: ["TimerFired"] } }), {});
      } catch (error) {
        return (error as { data?: Record<string, unknown> }).data?.["field"];
      }
      return null;
    })();
    expect(field).toBe("filter.type");
  });

  it("takes a filter and an exponential backoff with only their own fields", () => {
    const [consumer] = parseDispatchConfig(one({ filter: { types: ["TimerFired"], repoIds: ["payments"], runIds: ["r1"] }, backoff: { type: "exponential", baseMs: 10, maxMs: 100, factor: 2, jitter: "none" } }), {});
    expect(consumer).toMatchObject({ filter: { types: ["TimerFired"], repoIds: ["payments"], runIds: ["r1"] } });
  });
});

describe("an HTTP consumer's URL with credentials in it", () => {
  it.each(["http://user:hunter2secret@127.0.0.1:9/wake", "https://hunter2secret@example.com/wake", "http://:hunter2secret@127.0.0.1:9/"])(
    "is refused with config_invalid, and the error never repeats the credentials: %s",
    (url) => {
      let caught: unknown;
      try {
        checkConsumer({ name: "wake", http: { url, secret: "0123456789abcdef" } });
      } catch (error) {
        caught = error;
      }
      expect((caught as { code?: string }).code).toBe("config_invalid");
      expect(JSON.stringify({ message: (caught as Error).message, data: (caught as { data?: unknown }).data })).not.toContain("hunter2secret");
      expect(code(() => parseDispatchConfig(JSON.stringify({ consumers: [{ name: "wake", url, secret: "0123456789abcdef" }] }), {}))).toBe("config_invalid");
    },
  );
});

describe("idempotency keys and backoff", () => {
  it("keys a fire by deployment/run/timer/scheduledFor, an original-system fire by its seq, and the other types stably", () => {
    expect(idempotencyKey("d", "r", 4, { seq: 4, type: "TimerFired", data: { timerId: "t", scheduledFor: "2026-05-01T00:00:00.000Z" } })).toBe("d/r/t/2026-05-01T00:00:00.000Z");
    expect(idempotencyKey("d", "r", 4, { seq: 4, type: "TimerFired", data: { timerId: "t" } })).toBe("d/r/t/seq-4");
    expect(idempotencyKey("d", "r", 5, { seq: 5, type: "TimerSkipped", data: { timerId: "c", firstMissed: "2026-05-01T10:05:00.000Z", lastMissed: "2026-05-01T11:00:00.000Z", count: 12, reason: "missed" } })).toBe("d/r/c/skipped/2026-05-01T10:05:00.000Z");
    expect(idempotencyKey("d", "r", 6, { seq: 6, type: "SignalReceived", signalName: "go", signalId: "s-1", payload: null, at: "2026-05-01T00:00:00.000Z" })).toBe("d/r/signal/s-1");
    expect(idempotencyKey("d", "r", 7, { seq: 7, type: "RunFailed" })).toBe("d/r/RunFailed");
  });

  it("takes the list's last delay once past its end, and keeps exponential delays within [0, computed]", () => {
    const never = (): number => 0.999;
    expect([1, 2, 3, 4].map((n) => backoffDelayMs([10, 20], n, never))).toEqual([10, 20, 20, 20]);
    expect([1, 2, 3, 10].map((n) => backoffDelayMs({ type: "exponential", baseMs: 100, maxMs: 1_000, jitter: "none" }, n, never))).toEqual([100, 200, 400, 1_000]);
    expect(backoffDelayMs({ type: "exponential", baseMs: 100 }, 3, () => 0.5)).toBe(200);
  });
});
