// Time-ordered ids: their string order is the order of the times they were made at, and ids made
// in the same millisecond still differ.
import { describe, expect, it } from "vitest";
import { firstAuditIdAt, newAuditId } from "../../src/audit/audit-ids.js";
import { timeOrderedId } from "../../src/core/ids.js";

describe("timeOrderedId", () => {
  it("is 8 characters of time, then the random ones, all base62", () => {
    const id = timeOrderedId(Date.parse("2026-11-23T04:30:00Z"), 8);
    expect(id).toMatch(/^[0-9A-Za-z]{16}$/);
    expect(timeOrderedId(0, 0)).toBe("00000000");
    expect(timeOrderedId(61, 0)).toBe("0000000z");
    expect(timeOrderedId(62, 0)).toBe("00000010");
  });

  it("sorts as the times do, as plain strings", () => {
    const times = [0, 1, 61, 62, 3843, 3844, Date.parse("2001-09-09T01:46:40Z"), Date.parse("2026-11-23T04:30:00.000Z"), Date.parse("2026-11-23T04:30:00.001Z"), Date.parse("2200-01-01T00:00:00Z")];
    const ids = times.map((t) => timeOrderedId(t, 8));
    expect([...ids].sort()).toEqual(ids);
  });

  it("sorts as (ISO instant of its millisecond, id) does, so an id alone orders rows by (created_at, id)", () => {
    const made = Array.from({ length: 2000 }, (_, i) => {
      // Random instants up to 3000-01-01, and runs of neighbours across the carries of the last digits.
      const ms = i % 4 === 0 ? Math.floor(Math.random() * 32_503_680_000_000) : 3844 * (1 + Math.floor(Math.random() * 8e9)) - 2 + (i % 4);
      return { at: new Date(ms).toISOString(), id: timeOrderedId(ms, 8) };
    });
    const byInstantThenId = [...made].sort((a, b) => (a.at === b.at ? (a.id < b.id ? -1 : 1) : a.at < b.at ? -1 : 1)).map((r) => r.id);
    expect(made.map((r) => r.id).sort()).toEqual(byInstantThenId);
  });

  it("differs between ids of the same millisecond", () => {
    const ms = Date.parse("2026-11-23T04:30:00Z");
    const ids = new Set(Array.from({ length: 1000 }, () => timeOrderedId(ms, 8)));
    expect(ids.size).toBe(1000);
  });
});

describe("audit event ids", () => {
  it("sort as the events were recorded, also within one millisecond, and a range of instants is a range of ids", () => {
    const ms = Date.parse("2026-11-20T09:00:00.000Z");
    const ids = [newAuditId(ms), newAuditId(ms), newAuditId(ms), newAuditId(ms + 1), newAuditId(ms + 1)];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 3)) expect(id >= firstAuditIdAt(ms) && id < firstAuditIdAt(ms + 1)).toBe(true);
    expect(firstAuditIdAt(-1)).toBe(firstAuditIdAt(0));
    expect(firstAuditIdAt(Date.parse("9999-12-31T23:59:59Z")) > newAuditId(Date.parse("8000-01-01T00:00:00Z"))).toBe(true);
  });
});
