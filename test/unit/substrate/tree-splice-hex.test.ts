import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { writeHexOid } from "../../../src/substrate/tree-splice.js";

/** What `Buffer.write(oid, at, "hex")` makes of `oid` over a copy of `source`. */
function byNode(source: Buffer, at: number, oid: string): Buffer {
  const out = Buffer.from(source);
  out.write(oid, at, "hex");
  return out;
}

function byLoop(source: Buffer, at: number, oid: string): Buffer {
  const out = Buffer.from(source);
  writeHexOid(out, at, oid, source);
  return out;
}

describe("writeHexOid", () => {
  it("writes the bytes Buffer.write writes for every oid and every kind of bad one", () => {
    const source = randomBytes(64);
    const oids: string[] = [];
    for (let i = 0; i < 2_000; i++) oids.push(randomBytes(20).toString("hex"));
    oids.push("0".repeat(40), "f".repeat(40), "0123456789abcdef0123456789abcdef01234567");
    const good = randomBytes(20).toString("hex");
    oids.push(good.toUpperCase(), `${good.slice(0, 10)}G${good.slice(11)}`, `${good.slice(0, 39)}é`, good.slice(0, 38), `${good}00`, "", `${good.slice(0, 20)}zz${good.slice(22)}`, `${good.slice(0, 39)}/`, `${good.slice(0, 39)}:`, `${good.slice(0, 39)}\``, `${good.slice(0, 39)}g`);
    for (const oid of oids) {
      for (const at of [0, 7, 44]) expect(byLoop(source, at, oid).equals(byNode(source, at, oid)), `${oid} at ${at}`).toBe(true);
    }
  });
});
