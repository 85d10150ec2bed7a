import { describe, expect, it } from "vitest";
import { resolveEffective } from "../../src/funds/resolve.js";
import type { Layer } from "../../src/funds/resolve.js";
import type { LimitScope, SpendControls, SpendLimit } from "../../src/funds/types.js";
import { usd } from "./helpers.js";

const NOW = Date.parse("2026-11-20T09:30:00.000Z");
const NOW_ISO = "2026-11-20T09:30:00.000Z";
const FUTURE = "2026-12-01T00:00:00.000Z";
const PAST = "2026-11-01T00:00:00.000Z";

const amount = (units: string): SpendLimit => ({ amount: { money: usd(units) } });
const layers = (subject: SpendControls | null, cap: SpendControls | null = null, tenant: SpendControls | null = null): Layer[] => [
  { scope: "SCOPE_SUBJECT_APP", controls: subject },
  { scope: "SCOPE_APP_CAP", controls: cap },
  { scope: "SCOPE_TENANT_DEFAULT", controls: tenant },
];
const resolve = (...args: Parameters<typeof layers>) => resolveEffective(layers(...args), NOW);

describe("resolveEffective: per-row rule", () => {
  it("a suspension denies over everything, with no limit answered, and keeps the row's limit stored", () => {
    const row: SpendControls = {
      limit: amount("250"),
      period: "PERIOD_KIND_WEEKLY",
      extension: { limit: amount("500"), expiresAt: FUTURE },
      suspension: { reason: "Card reported lost", suspendedAt: PAST },
    };
    const snapshot = structuredClone(row);
    expect(resolve(row, { limit: { unlimited: {} } })).toEqual({
      decision: "EFFECTIVE_DECISION_DENY",
      limit: null,
      period: null,
      scope: "SCOPE_SUBJECT_APP",
      cause: "CAUSE_SUSPENSION",
      evaluatedAt: NOW_ISO,
      trace: ['SCOPE_SUBJECT_APP: suspended ("Card reported lost") -> deny'],
      perAuthorization: null,
      maxAuthorizations: null,
    });
    expect(row).toEqual(snapshot);
  });

  it("a suspension without a reason says so plainly", () => {
    expect(resolve({ suspension: {} }).trace).toEqual(["SCOPE_SUBJECT_APP: suspended -> deny"]);
  });

  it("a suspension on a lower layer denies when the layers above have no opinion", () => {
    const out = resolve(null, { limit: amount("1"), suspension: { reason: "audit" } });
    expect(out).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", scope: "SCOPE_APP_CAP", cause: "CAUSE_SUSPENSION", limit: null });
  });

  it("an unexpired extension's limit applies over the base limit, with the row's period", () => {
    const out = resolve({ limit: amount("250"), period: "PERIOD_KIND_WEEKLY", extension: { limit: amount("500"), expiresAt: FUTURE } });
    expect(out).toMatchObject({
      decision: "EFFECTIVE_DECISION_LIMIT",
      limit: amount("500"),
      period: "PERIOD_KIND_WEEKLY",
      scope: "SCOPE_SUBJECT_APP",
      cause: "CAUSE_EXTENSION",
    });
    expect(out.trace).toEqual([`SCOPE_SUBJECT_APP: extension until ${FUTURE} USD 500 per PERIOD_KIND_WEEKLY -> limit`]);
  });

  it("an extension applies on a row with no base limit", () => {
    expect(resolve({ extension: { limit: amount("70"), expiresAt: FUTURE } }, { limit: amount("1") })).toMatchObject({
      limit: amount("70"),
      scope: "SCOPE_SUBJECT_APP",
      cause: "CAUSE_EXTENSION",
    });
  });

  it("an unlimited extension answers unlimited with cause extension", () => {
    expect(resolve({ limit: amount("1"), extension: { limit: { unlimited: {} }, expiresAt: FUTURE } })).toMatchObject({
      decision: "EFFECTIVE_DECISION_UNLIMITED",
      limit: { unlimited: {} },
      period: null,
      cause: "CAUSE_EXTENSION",
    });
  });

  it("an extension expiring exactly at now has lapsed", () => {
    const row: SpendControls = { limit: amount("250"), extension: { limit: amount("500"), expiresAt: NOW_ISO } };
    expect(resolve(row)).toMatchObject({ limit: amount("250"), cause: "CAUSE_LIMIT" });
    expect(resolveEffective(layers(row), NOW - 1)).toMatchObject({ limit: amount("500"), cause: "CAUSE_EXTENSION" });
  });

  it("a lapsed extension falls back to the row's own base limit, not the next layer", () => {
    const out = resolve({ limit: amount("250"), extension: { limit: amount("500"), expiresAt: PAST } }, { limit: amount("1000") });
    expect(out).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", limit: amount("250"), scope: "SCOPE_SUBJECT_APP", cause: "CAUSE_LIMIT" });
    expect(out.trace).toEqual([`SCOPE_SUBJECT_APP: extension lapsed at ${PAST}; base limit USD 250 per PERIOD_KIND_MONTHLY by default -> limit`]);
  });

  it("a lapsed extension on a row with no base limit states no opinion", () => {
    const out = resolve({ extension: { limit: amount("500"), expiresAt: PAST } }, { limit: amount("1000") });
    expect(out).toMatchObject({ limit: amount("1000"), scope: "SCOPE_APP_CAP", cause: "CAUSE_LIMIT" });
    expect(out.trace[0]).toBe(`SCOPE_SUBJECT_APP: extension lapsed at ${PAST}; no base limit -> no opinion`);
  });

  it("an extension lacking a limit or an expiry never takes effect", () => {
    expect(resolve({ limit: amount("3"), extension: { expiresAt: FUTURE } })).toMatchObject({ limit: amount("3"), cause: "CAUSE_LIMIT" });
    const noExpiry = resolve({ limit: amount("3"), extension: { limit: amount("9") } });
    expect(noExpiry).toMatchObject({ limit: amount("3"), cause: "CAUSE_LIMIT" });
    expect(noExpiry.trace[0]).toMatch(/^SCOPE_SUBJECT_APP: extension without expiry ignored; base limit USD 3/);
  });

  it("no opinion falls through, layer by layer, to the first that has one", () => {
    const out = resolve(null, {}, { limit: amount("100"), period: "PERIOD_KIND_MONTHLY" });
    expect(out).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", limit: amount("100"), scope: "SCOPE_TENANT_DEFAULT", cause: "CAUSE_LIMIT" });
    expect(out.trace).toEqual([
      "SCOPE_SUBJECT_APP: no row -> no opinion",
      "SCOPE_APP_CAP: nothing set -> no opinion",
      "SCOPE_TENANT_DEFAULT: base limit USD 100 per PERIOD_KIND_MONTHLY -> limit",
    ]);
  });

  it("the first layer with an opinion decides, even when a lower one is stricter", () => {
    expect(resolve({ limit: { unlimited: {} } }, { limit: { blocked: {} } })).toMatchObject({
      decision: "EFFECTIVE_DECISION_UNLIMITED",
      scope: "SCOPE_SUBJECT_APP",
    });
  });
});

describe("resolveEffective: blocked, unlimited and no limit", () => {
  it.each<[LimitScope, SpendControls | null, SpendControls | null, SpendControls | null]>([
    ["SCOPE_SUBJECT_APP", { limit: { blocked: {} } }, { limit: amount("1") }, null],
    ["SCOPE_APP_CAP", null, { limit: { blocked: {} } }, { limit: amount("1") }],
    ["SCOPE_TENANT_DEFAULT", null, null, { limit: { blocked: {} } }],
  ])("blocked denies at %s", (scope, subject, cap, tenant) => {
    const out = resolve(subject, cap, tenant);
    expect(out).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", limit: { blocked: {} }, period: null, scope, cause: "CAUSE_BLOCKED" });
    expect(out.trace.at(-1)).toBe(`${scope}: base limit blocked -> deny`);
  });

  it("blocked ignores a period stated beside it", () => {
    expect(resolve({ limit: { blocked: {} }, period: "PERIOD_KIND_DAILY" }).period).toBeNull();
  });

  it("unlimited answers unlimited with no period", () => {
    const out = resolve(null, { limit: { unlimited: {} }, period: "PERIOD_KIND_YEARLY" });
    expect(out).toMatchObject({
      decision: "EFFECTIVE_DECISION_UNLIMITED",
      limit: { unlimited: {} },
      period: null,
      scope: "SCOPE_APP_CAP",
      cause: "CAUSE_LIMIT",
    });
    expect(out.trace.at(-1)).toBe("SCOPE_APP_CAP: base limit unlimited -> unlimited");
  });

  it("no opinion anywhere denies with CAUSE_NO_LIMIT and SCOPE_UNSPECIFIED", () => {
    expect(resolve(null, {}, { extension: { limit: amount("5"), expiresAt: PAST } })).toEqual({
      decision: "EFFECTIVE_DECISION_DENY",
      limit: null,
      period: null,
      scope: "SCOPE_UNSPECIFIED",
      perAuthorization: null,
      maxAuthorizations: null,
      cause: "CAUSE_NO_LIMIT",
      evaluatedAt: NOW_ISO,
      trace: [
        "SCOPE_SUBJECT_APP: no row -> no opinion",
        "SCOPE_APP_CAP: nothing set -> no opinion",
        `SCOPE_TENANT_DEFAULT: extension lapsed at ${PAST}; no base limit -> no opinion`,
        "no layer states an opinion -> deny",
      ],
    });
  });

  it("no layers at all denies with CAUSE_NO_LIMIT", () => {
    expect(resolveEffective([], NOW)).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_NO_LIMIT", scope: "SCOPE_UNSPECIFIED" });
  });
});

describe("resolveEffective: period of an amount", () => {
  it("uses the deciding row's own period", () => {
    expect(resolve({ limit: amount("1"), period: "PERIOD_KIND_DAILY" }, { limit: amount("2"), period: "PERIOD_KIND_YEARLY" }).period).toBe(
      "PERIOD_KIND_DAILY",
    );
  });

  it("inherits the period of the next layer below that states one", () => {
    const out = resolve({ limit: amount("1") }, { limit: amount("2") }, { limit: { unlimited: {} }, period: "PERIOD_KIND_QUARTERLY" });
    expect(out.period).toBe("PERIOD_KIND_QUARTERLY");
    expect(out.trace).toEqual(["SCOPE_SUBJECT_APP: base limit USD 1 per PERIOD_KIND_QUARTERLY from SCOPE_TENANT_DEFAULT -> limit"]);
  });

  it("takes the nearest lower layer's period, not a farther one", () => {
    const out = resolve({ limit: amount("1") }, { limit: amount("2"), period: "PERIOD_KIND_WEEKLY" }, { limit: amount("3"), period: "PERIOD_KIND_YEARLY" });
    expect(out.period).toBe("PERIOD_KIND_WEEKLY");
  });

  it("counts a lower layer's period even when that layer is suspended (it still has a limit with a period)", () => {
    expect(resolve({ limit: amount("1") }, { limit: amount("2"), period: "PERIOD_KIND_DAILY", suspension: {} }).period).toBe("PERIOD_KIND_DAILY");
  });

  it("ignores a lower layer that has a period but no limit, and UNSPECIFIED periods", () => {
    const out = resolve(
      { limit: amount("1"), period: "PERIOD_KIND_UNSPECIFIED" },
      { period: "PERIOD_KIND_DAILY" },
      { limit: amount("3"), period: "PERIOD_KIND_UNSPECIFIED" },
    );
    expect(out.period).toBe("PERIOD_KIND_MONTHLY");
  });

  it("defaults to monthly when no layer states a period", () => {
    const out = resolve({ limit: amount("1") }, { limit: amount("2") });
    expect(out.period).toBe("PERIOD_KIND_MONTHLY");
    expect(out.trace).toEqual(["SCOPE_SUBJECT_APP: base limit USD 1 per PERIOD_KIND_MONTHLY by default -> limit"]);
  });

  it("an extension never changes the period: the row's period, else inherited", () => {
    const ext = { limit: amount("500"), expiresAt: FUTURE };
    expect(resolve({ limit: amount("1"), period: "PERIOD_KIND_DAILY", extension: ext }).period).toBe("PERIOD_KIND_DAILY");
    expect(resolve({ extension: ext }, { limit: amount("2"), period: "PERIOD_KIND_WEEKLY" }).period).toBe("PERIOD_KIND_WEEKLY");
  });

  it("a lower layer never decides the period from above: only layers below the decider count", () => {
    expect(resolve({ period: "PERIOD_KIND_DAILY" }, { limit: amount("2") }).period).toBe("PERIOD_KIND_MONTHLY");
  });
});

describe("resolveEffective: answer shape", () => {
  it("evaluatedAt is now as an ISO string", () => {
    expect(resolveEffective(layers(null), Date.parse("2027-01-02T03:04:05.678Z")).evaluatedAt).toBe("2027-01-02T03:04:05.678Z");
  });

  it("formats fractional money in the trace", () => {
    expect(resolve({ limit: { amount: { money: usd("12", 340_000_000) } } }).trace[0]).toContain("USD 12.34");
  });

  it("keeps trace lines within the contract's 500 characters even for long reasons", () => {
    const out = resolve({ suspension: { reason: "x".repeat(500) } });
    expect(out.trace[0]!.length).toBeLessThanOrEqual(500);
    expect(out.trace[0]).toContain("…");
  });

  it("quotes a reason escaped first, then clipped in code points at a whole escape: every line fits whatever the reason holds", () => {
    // Reasons of 500 characters that escape longest (rows stored before the text rule may hold control characters).
    const bound = 200 + "SCOPE_TENANT_DEFAULT: suspended () -> deny".length;
    for (const c of ["\u0001", '"', "\\", "\ud800", "😀", "\u0085"]) {
      const suspended = { suspension: { reason: c.repeat(500) } };
      for (const trace of [resolve(suspended).trace, resolve(null, suspended).trace, resolve(null, null, suspended).trace]) {
        for (const line of trace) expect([...line].length, line).toBeLessThanOrEqual(bound);
      }
    }
    expect(resolve({ suspension: { reason: "\u0001".repeat(100) } }).trace).toEqual([`SCOPE_SUBJECT_APP: suspended ("${"\\u0001".repeat(32)}…") -> deny`]);
    // Counted in code points: 198 emoji and the quotes are 200; one more is clipped.
    expect(resolve({ suspension: { reason: "😀".repeat(198) } }).trace).toEqual([`SCOPE_SUBJECT_APP: suspended ("${"😀".repeat(198)}") -> deny`]);
    expect(resolve({ suspension: { reason: "😀".repeat(199) } }).trace).toEqual([`SCOPE_SUBJECT_APP: suspended ("${"😀".repeat(197)}…") -> deny`]);
  });
});

describe("resolveEffective: the cap on one authorization", () => {
  it("the first layer stating one sets it, whichever layer decides the limit; its line follows the deciding one", () => {
    const r = resolve({ limit: amount("100") }, { perAuthorization: usd("20") }, { limit: amount("5"), perAuthorization: usd("60") });
    expect(r).toMatchObject({ scope: "SCOPE_SUBJECT_APP", perAuthorization: usd("20") });
    expect(r.trace.at(-1)).toBe("SCOPE_APP_CAP: per authorization USD 20 -> cap");
    expect(resolve({ limit: amount("100"), perAuthorization: usd("40") }, { perAuthorization: usd("20") }).perAuthorization).toEqual(usd("40"));
    expect(resolve(null, null, { limit: { unlimited: {} }, perAuthorization: usd("60") }).perAuthorization).toEqual(usd("60"));
    expect(resolve({ limit: amount("100") }).perAuthorization).toBeNull();
  });

  it("none is in force under a deny: a suspension, blocked, or no limit", () => {
    expect(resolve({ suspension: {}, perAuthorization: usd("20") }).perAuthorization).toBeNull();
    expect(resolve({ limit: { blocked: {} } }, { perAuthorization: usd("20") }).perAuthorization).toBeNull();
    expect(resolve({ perAuthorization: usd("20") }).perAuthorization).toBeNull();
  });
});

describe("resolveEffective: the count of authorizations per window", () => {
  it("the first layer stating one sets it, whichever layer decides the limit, on its own beside the cap; none under a deny", () => {
    const r = resolve({ limit: amount("100"), perAuthorization: usd("5") }, { maxAuthorizations: 3 }, { maxAuthorizations: 9 });
    expect(r).toMatchObject({ scope: "SCOPE_SUBJECT_APP", perAuthorization: usd("5"), maxAuthorizations: 3 });
    expect(r.trace.slice(-2)).toEqual(["SCOPE_SUBJECT_APP: per authorization USD 5 -> cap", "SCOPE_APP_CAP: at most 3 authorizations per window -> count"]);
    expect(resolve({ limit: amount("100"), maxAuthorizations: 20 }, { maxAuthorizations: 3 }).maxAuthorizations).toBe(20);
    expect(resolve(null, null, { limit: { unlimited: {} }, maxAuthorizations: 7 }).maxAuthorizations).toBe(7);
    expect(resolve({ limit: amount("100") }).maxAuthorizations).toBeNull();
    expect(resolve({ suspension: {}, maxAuthorizations: 3 }).maxAuthorizations).toBeNull();
    expect(resolve({ limit: { blocked: {} } }, { maxAuthorizations: 3 }).maxAuthorizations).toBeNull();
    expect(resolve({ maxAuthorizations: 3 }).maxAuthorizations).toBeNull();
  });
});
