/**
 * The serving state of the leases a cluster instance holds: what may be fired and pushed, and
 * how renewals, deadlines and hand-overs move it.
 */
import { describe, expect, it } from "vitest";
import { createLeaseHoldings } from "../../../seams/cluster/lease-holdings.js";
import { WorkflowHostError } from "../../../src/errors.js";

const codeOf = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (error) {
    return error instanceof WorkflowHostError ? error.code : "not a WorkflowHostError";
  }
};

describe("lease holdings", () => {
  it("serves a lease only once prepared, and refuses writes while preparing, unconfirmed or gone (lease_not_held)", () => {
    const leases = createLeaseHoldings();
    const lease = leases.add("d1", 3, 1_000);
    expect(leases.serving()).toEqual([]);
    expect(codeOf(() => leases.writable("d1", "h.1", 0))).toBe("lease_not_held");
    lease.state = "serving";
    expect(leases.serving()).toEqual(["d1"]);
    expect(leases.writable("d1", "h.1", 1_000)).toBe(lease);
    expect(codeOf(() => leases.writable("d2", "h.1", 0))).toBe("lease_not_held");
  });

  it("past its deadline a lease turns unconfirmed (no longer served), and a renewal at the same epoch serves it again", () => {
    const leases = createLeaseHoldings();
    leases.add("d1", 1, 1_000).state = "serving";
    leases.add("d2", 1, 5_000).state = "serving";
    expect(leases.overdue(1_001)).toEqual([{ deployment: "d1", epoch: 1 }]);
    expect(leases.serving()).toEqual(["d2"]);
    expect(codeOf(() => leases.writable("d1", "h.1", 1_001))).toBe("lease_not_held");
    const sent = leases.held();
    const outcome = leases.renewed(sent, sent, 9_000);
    expect(outcome).toEqual({ confirmed: [{ deployment: "d1", epoch: 1 }], lost: [] });
    expect(leases.serving()).toEqual(["d1", "d2"]);
    expect(leases.get("d1")?.deadlineMs).toBe(9_000);
  });

  it("a write past the deadline is refused and leaves the lapse to overdue, which returns it once (its caller reports it)", () => {
    const leases = createLeaseHoldings();
    leases.add("d1", 1, 1_000).state = "serving";
    leases.add("d2", 1, 1_000).state = "releasing";
    expect(codeOf(() => leases.writable("d1", "h.1", 1_001))).toBe("lease_not_held");
    expect(codeOf(() => leases.writable("d2", "h.1", 1_001))).toBe("lease_not_held");
    expect(leases.get("d1")?.state).toBe("serving");
    expect(leases.overdue(1_001)).toEqual([{ deployment: "d1", epoch: 1 }]);
    expect(leases.overdue(1_002)).toEqual([]);
    expect(leases.get("d2")?.state).toBe("releasing");
  });

  it("a lease sent for renewal and not renewed is lost; a newer acquisition of the same deployment is kept", () => {
    const leases = createLeaseHoldings();
    leases.add("d1", 1, 1_000).state = "serving";
    const sent = leases.held();
    leases.drop("d1", leases.get("d1") as never);
    const newer = leases.add("d1", 2, 1_000);
    expect(leases.renewed(sent, [], 2_000)).toEqual({ confirmed: [], lost: [] });
    expect(leases.get("d1")).toBe(newer);
    expect(leases.renewed(leases.held(), [], 2_000)).toEqual({ confirmed: [], lost: [{ deployment: "d1", epoch: 2 }] });
    expect(leases.get("d1")).toBeUndefined();
  });

  it("a renewal clears the re-check a refused push asked for", () => {
    const leases = createLeaseHoldings();
    const lease = leases.add("d1", 1, 1_000);
    lease.state = "serving";
    lease.recheck = true;
    leases.renewed(leases.held(), leases.held(), 2_000);
    expect(lease.recheck).toBe(false);
  });

  it("hands over serving and unconfirmed leases, never one being prepared; those no longer count toward the share but still take the commit in flight", () => {
    const leases = createLeaseHoldings();
    leases.add("d1", 1, 1_000);
    leases.add("d2", 1, 1_000).state = "serving";
    leases.add("d3", 1, 1_000).state = "unconfirmed";
    const handed = leases.handOver(5).map(([id]) => id);
    expect(handed).toEqual(["d2", "d3"]);
    expect(leases.kept()).toBe(1);
    expect(leases.serving()).toEqual([]);
    expect(leases.writable("d2", "h.1", 0).state).toBe("releasing");
  });
});
