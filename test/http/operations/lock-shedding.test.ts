// The rules of src/http/lock-shedding.ts, with a clock of the test's: an operation is shed only once
// one of its requests lost to lock_timeout while the pool was short; shed, its requests are answered
// at once until a single probe runs; a probe that loses sheds it again, one that does not ends it.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../src/core/logger.js";
import { LockShedding } from "../../../src/http/lock-shedding.js";

const OP = "svc.api.automations.v1.IncomingWebhookService.Receive";
const OTHER = "svc.api.funds.v1.SubjectAppLimitService.Get";

function shedding(poolShort: boolean) {
  const clock = { now: 0, short: poolShort };
  const shed = new LockShedding({ holdMs: 1_000, poolShort: () => clock.short, logger: createLogger("silent"), now: () => clock.now });
  return { shed, clock };
}

describe("lock shedding", () => {
  it("a lock wait that costs no other request its connection sheds nothing", () => {
    const { shed } = shedding(false);
    shed.ended(OP, true, false);
    expect(shed.admit(OP)).toBe("run");
  });

  it("a request lost to lock_timeout while the pool was short sheds its operation alone, for lock_timeout, then lets one probe run", () => {
    const { shed, clock } = shedding(true);
    shed.ended(OP, true, false);
    expect(shed.admit(OP)).toBe("shed");
    expect(shed.admit(OTHER)).toBe("run");
    clock.now = 999;
    expect(shed.admit(OP)).toBe("shed");
    clock.now = 1_000;
    expect(shed.admit(OP)).toBe("probe");
    expect(shed.admit(OP), "one probe at a time").toBe("shed");
    expect(shed.retryAfterSeconds).toBe(1);
  });

  it("a probe that loses sheds the operation again, even with the pool no longer short; one that does not ends the shedding", () => {
    const { shed, clock } = shedding(true);
    shed.ended(OP, true, false);
    clock.now = 1_000;
    clock.short = false;
    expect(shed.admit(OP)).toBe("probe");
    shed.ended(OP, true, true);
    expect(shed.admit(OP)).toBe("shed");
    clock.now = 2_000;
    expect(shed.admit(OP)).toBe("probe");
    shed.ended(OP, false, true);
    expect(shed.admit(OP)).toBe("run");
  });

  it("requests already under way when their operation was shed end without changing it", () => {
    const { shed, clock } = shedding(true);
    shed.ended(OP, true, false);
    clock.now = 500;
    shed.ended(OP, true, false);
    shed.ended(OP, false, false);
    clock.now = 1_000;
    expect(shed.admit(OP)).toBe("probe");
  });
});
