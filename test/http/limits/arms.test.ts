// Which SpendLimit arms each scope accepts, and the rules of controls that replace a set as a whole
// (app caps, the tenant default): extensions in the future unless unchanged, suspendedAt set by the
// server, empty controls. The tenant default is changed here only in its own describe, and reset.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { amount, BLOCKED, DAY, expectError, HOUR, newAppId, startFundsServer, storedControls, UNLIMITED, type Funds, shown, iso } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let subject: { userId: string; f: Funds };

beforeAll(async () => void ({ ts, admin, subject } = await startFundsServer()));
afterAll(async () => ts?.stop());

const inFuture = (ms = DAY) => iso(ts.clock.now() + ms);

describe("MyFundLimitsService.SetLimit accepts only the amount arm", () => {
  it("amount is accepted, with or without a period", async () => {
    const a = newAppId();
    expect(unwrap(await subject.f.mySetLimit(a, { limit: amount("40") })).limit.controls).toEqual(shown({ limit: amount("40") }));
    expect(unwrap(await subject.f.mySetLimit(a, { limit: amount("40"), period: "PERIOD_KIND_DAILY" })).limit.controls).toEqual(shown({
      limit: amount("40"),
      period: "PERIOD_KIND_DAILY",
    }));
  });

  for (const [name, limit] of [["blocked", BLOCKED], ["unlimited", UNLIMITED]] as const) {
    it(`${name} is 400 LIMIT_ARM_NOT_ALLOWED, and nothing is stored`, async () => {
      const a = newAppId();
      expectError(await subject.f.mySetLimit(a, { limit }), 400, "LIMIT_ARM_NOT_ALLOWED");
      expectError(await subject.f.mySetLimit(a, { limit, period: "PERIOD_KIND_MONTHLY" }), 400, "LIMIT_ARM_NOT_ALLOWED");
      expectError(await subject.f.myGet(a), 404, "ROW_NOT_FOUND");
      // An existing row keeps its limit.
      unwrap(await subject.f.mySetLimit(a, { limit: amount("7") }));
      expectError(await subject.f.mySetLimit(a, { limit }), 400, "LIMIT_ARM_NOT_ALLOWED");
      expect(unwrap(await subject.f.myGet(a)).limit.controls).toEqual(shown({ limit: amount("7") }));
    });
  }

  it("a limit is required", async () => {
    const a = newAppId();
    expectError(await subject.f.mySetLimit(a, {}), 400);
    expectError(await subject.f.myGet(a), 404, "ROW_NOT_FOUND");
  });
});

describe("subject-app rows accept all three arms (SubjectAppLimitService.SetLimit)", () => {
  for (const [name, limit] of [["amount", amount("25")], ["blocked", BLOCKED], ["unlimited", UNLIMITED]] as const) {
    it(name, async () => {
      const a = newAppId();
      const row = unwrap(await admin.setLimit(subject.userId, a, { limit, period: "PERIOD_KIND_WEEKLY" })).limit;
      // A period with blocked or unlimited is stored and has no effect.
      expect(row.controls).toEqual(shown({ limit, period: "PERIOD_KIND_WEEKLY" }));
      expect(await storedControls(admin, subject.userId, a)).toEqual(shown({ limit, period: "PERIOD_KIND_WEEKLY" }));
    });
  }
});

describe("an extension never accepts blocked", () => {
  it("SubjectAppLimitService.SetExtension: blocked is 400 LIMIT_ARM_NOT_ALLOWED; amount and unlimited are accepted", async () => {
    const a = newAppId();
    expectError(await admin.setExtension(subject.userId, a, { limit: BLOCKED, expiresAt: inFuture() }), 400, "LIMIT_ARM_NOT_ALLOWED");
    expect(await storedControls(admin, subject.userId, a)).toBeNull();
    const expiresAt = inFuture();
    expect(unwrap(await admin.setExtension(subject.userId, a, { limit: UNLIMITED, expiresAt, reason: "audit" })).limit.controls).toEqual(shown({
      extension: { limit: UNLIMITED, expiresAt, reason: "audit" },
    }));
    expect(unwrap(await admin.setExtension(subject.userId, a, { limit: amount("9"), expiresAt })).limit.controls).toEqual(shown({
      extension: { limit: amount("9"), expiresAt },
    }));
    expectError(await admin.setExtension(subject.userId, a, { limit: BLOCKED, expiresAt }), 400, "LIMIT_ARM_NOT_ALLOWED");
    expect(await storedControls(admin, subject.userId, a)).toEqual(shown({ extension: { limit: amount("9"), expiresAt } }));
  });

  it("AppCapService.Set: an extension with blocked is 400 LIMIT_ARM_NOT_ALLOWED", async () => {
    const a = newAppId();
    expectError(await admin.capSet(a, { controls: { limit: amount("1"), extension: { limit: BLOCKED, expiresAt: inFuture() } } }), 400, "LIMIT_ARM_NOT_ALLOWED");
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");
  });

  it("FundPolicyService.Update: a default extension with blocked is 400 LIMIT_ARM_NOT_ALLOWED", async () => {
    const r = await admin.policyUpdate({
      fundPolicy: { currencyCode: "USD", defaultControls: { extension: { limit: BLOCKED, expiresAt: inFuture() } } },
      updateMask: "defaultControls",
    });
    expectError(r, 400, "LIMIT_ARM_NOT_ALLOWED");
    expect(unwrap(await admin.policyGet()).fundPolicy.defaultControls).toBeNull();
  });

  it("a timestamp is stored in its canonical UTC form", async () => {
    const a = newAppId();
    const at = ts.clock.now() + DAY;
    // The same instant written with a +01:00 offset and second precision.
    const offset = iso(at + HOUR).replace(/\.\d{3}Z$/, "+01:00");
    const row = unwrap(await admin.setExtension(subject.userId, a, { limit: amount("1"), expiresAt: offset })).limit;
    expect(row.controls?.extension?.expiresAt).toBe(iso(Math.floor(at / 1000) * 1000));
  });
});

describe("app caps accept all three arms and replace their controls as a whole", () => {
  for (const [name, limit] of [["amount", amount("1000")], ["blocked", BLOCKED], ["unlimited", UNLIMITED]] as const) {
    it(name, async () => {
      const a = newAppId();
      const cap = unwrap(await admin.capSet(a, { controls: { limit, period: "PERIOD_KIND_QUARTERLY" } })).appCap;
      expect(cap).toMatchObject({ appId: a, controls: { limit, period: "PERIOD_KIND_QUARTERLY" }, deletedAt: null });
      expect(unwrap(await admin.capGet(a)).appCap).toEqual(cap);
    });
  }

  it("a field left out is cleared; all fields may be set together", async () => {
    const a = newAppId();
    const expiresAt = inFuture();
    const full = { limit: amount("10"), period: "PERIOD_KIND_DAILY", extension: { limit: amount("20"), expiresAt }, suspension: { reason: "r" } };
    const cap = unwrap(await admin.capSet(a, { controls: full })).appCap;
    expect(cap.controls).toEqual(shown({ ...full, suspension: { reason: "r", suspendedAt: iso(ts.clock.now()) } }));
    expect(unwrap(await admin.capSet(a, { controls: { limit: amount("11") } })).appCap.controls).toEqual(shown({ limit: amount("11") }));
  });

  it("controls with no field present are 400 (Delete removes a cap)", async () => {
    const a = newAppId();
    expectError(await admin.capSet(a, { controls: {} }), 400, "CONTROLS_EMPTY");
    expectError(await admin.capSet(a, { controls: { limit: null, extension: null, suspension: null } }), 400, "CONTROLS_EMPTY");
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");
    unwrap(await admin.capSet(a, { controls: { limit: BLOCKED } }));
    expectError(await admin.capSet(a, { controls: {} }), 400, "CONTROLS_EMPTY");
    expect(unwrap(await admin.capGet(a)).appCap.controls).toEqual(shown({ limit: BLOCKED }));
  });

  it("suspendedAt is set by the server when a suspension appears and kept while it stays; a value sent is ignored", async () => {
    const a = newAppId();
    const first = ts.clock.now();
    const cap = unwrap(await admin.capSet(a, { controls: { suspension: { reason: "a", suspendedAt: "2001-01-01T00:00:00Z" } } })).appCap;
    expect(cap.controls?.suspension).toEqual({ reason: "a", suspendedAt: iso(first) });
    ts.clock.advance(HOUR);
    const again = unwrap(await admin.capSet(a, { controls: { limit: amount("3"), suspension: { reason: "b", suspendedAt: "2030-01-01T00:00:00Z" } } })).appCap;
    expect(again.controls?.suspension).toEqual({ reason: "b", suspendedAt: iso(first) });
    // Lifted, then suspended again: a new freeze.
    unwrap(await admin.capSet(a, { controls: { limit: amount("3") } }));
    ts.clock.advance(HOUR);
    const later = unwrap(await admin.capSet(a, { controls: { limit: amount("3"), suspension: {} } })).appCap;
    expect(later.controls?.suspension).toEqual({ reason: "", suspendedAt: iso(ts.clock.now()) });
  });

  it("an extension must expire in the future, unless it equals the stored one (a lapsed extension round-trips)", async () => {
    const a = newAppId();
    const past = iso(ts.clock.now() - HOUR);
    expectError(await admin.capSet(a, { controls: { limit: amount("1"), extension: { limit: amount("2"), expiresAt: past } } }), 400, "EXTENSION_EXPIRY_NOT_IN_FUTURE");
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");

    const expiresAt = inFuture(HOUR);
    const set = unwrap(await admin.capSet(a, { controls: { limit: amount("1"), extension: { limit: amount("2"), expiresAt, reason: "bump" } } })).appCap;
    ts.clock.advance(2 * HOUR);
    // Read, modify another field, write back: the lapsed extension is accepted as it is.
    const read = unwrap(await admin.capGet(a)).appCap;
    expect(read).toEqual(set);
    const written = unwrap(await admin.capSet(a, { controls: { ...read.controls, limit: amount("5") } })).appCap;
    expect(written.controls).toEqual(shown({ limit: amount("5"), extension: { limit: amount("2"), expiresAt, reason: "bump" } }));
    // Changing anything of the lapsed extension makes it a new grant, which must be in the future.
    expectError(
      await admin.capSet(a, { controls: { limit: amount("5"), extension: { limit: amount("3"), expiresAt, reason: "bump" } } }),
      400,
      "EXTENSION_EXPIRY_NOT_IN_FUTURE",
    );
    expect(unwrap(await admin.capGet(a)).appCap.controls).toEqual(written.controls);
  });

  it("an extension needs its limit and its expiry", async () => {
    const a = newAppId();
    expectError(await admin.capSet(a, { controls: { extension: { expiresAt: inFuture() } } }), 400, "EXTENSION_LIMIT_MISSING");
    expectError(await admin.capSet(a, { controls: { extension: { limit: amount("1") } } }), 400, "EXTENSION_EXPIRY_MISSING");
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");
  });
});

describe("the tenant default accepts all three arms, with the rules of app caps", () => {
  const update = (defaultControls: unknown) => admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls }, updateMask: "defaultControls" });

  afterAll(async () => {
    unwrap(await update(null));
  });

  for (const [name, limit] of [["amount", amount("100")], ["blocked", BLOCKED], ["unlimited", UNLIMITED]] as const) {
    it(name, async () => {
      const policy = unwrap(await update({ limit, period: "PERIOD_KIND_YEARLY" })).fundPolicy;
      expect(policy).toEqual({ currencyCode: "USD", timeZone: "UTC", defaultControls: shown({ limit, period: "PERIOD_KIND_YEARLY" }), updatedAt: iso(ts.clock.now()) });
      expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(policy);
    });
  }

  it("an extension without its limit or its expiry is 400, and the default is unchanged", async () => {
    const before = unwrap(await admin.policyGet()).fundPolicy;
    const noLimit = await update({ extension: { expiresAt: inFuture(HOUR) } });
    expectError(noLimit, 400, "EXTENSION_LIMIT_MISSING");
    expect((noLimit.error as { message: string }).message).toBe("body.fundPolicy.defaultControls.extension.limit: is required");
    const noExpiry = await update({ extension: { limit: amount("1") } });
    expectError(noExpiry, 400, "EXTENSION_EXPIRY_MISSING");
    expect((noExpiry.error as { message: string }).message).toBe("body.fundPolicy.defaultControls.extension.expiresAt: is required");
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(before);
  });

  it("suspendedAt is the server's; an unchanged lapsed extension round-trips; a new one must be in the future", async () => {
    const expiresAt = inFuture(HOUR);
    const first = ts.clock.now();
    const set = unwrap(await update({ extension: { limit: UNLIMITED, expiresAt }, suspension: { suspendedAt: "2001-01-01T00:00:00Z" } })).fundPolicy;
    expect(set.defaultControls).toEqual(shown({ extension: { limit: UNLIMITED, expiresAt }, suspension: { suspendedAt: iso(first) } }));
    ts.clock.advance(2 * HOUR);
    const read = unwrap(await admin.policyGet()).fundPolicy;
    const written = unwrap(await update({ ...read.defaultControls, limit: amount("1") })).fundPolicy;
    expect(written.defaultControls).toEqual(shown({ limit: amount("1"), extension: { limit: UNLIMITED, expiresAt }, suspension: { suspendedAt: iso(first) } }));
    expectError(await update({ extension: { limit: amount("1"), expiresAt } }), 400, "EXTENSION_EXPIRY_NOT_IN_FUTURE");
    expect(unwrap(await admin.policyGet()).fundPolicy).toEqual(written);
  });

  it("null removes the default; empty controls state no opinion and are stored as none", async () => {
    unwrap(await update({ limit: amount("1") }));
    expect(unwrap(await update(null)).fundPolicy.defaultControls).toBeNull();
    unwrap(await update({ limit: amount("1") }));
    expect(unwrap(await update({})).fundPolicy.defaultControls).toBeNull();
  });
});

describe("what an answer shows can be sent back as it is (every field present, the unset ones null)", () => {
  it("SetLimit and the caller's SetLimit take a limit read from a row, null arms included", async () => {
    const a = newAppId();
    const row = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("12"), period: "PERIOD_KIND_DAILY" })).limit;
    expect(row.controls?.limit).toEqual({ amount: { money: { currencyCode: "USD", units: "12", nanos: 0 } }, blocked: null, unlimited: null });
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.setLimit(subject.userId, a, { limit: row.controls!.limit, period: row.controls!.period })).limit).toEqual(row);

    const mine = unwrap(await subject.f.mySetLimit(a, { limit: row.controls!.limit, period: "PERIOD_KIND_UNSPECIFIED" })).limit;
    expect(mine.controls).toEqual(shown({ limit: amount("12") }));
    const again = unwrap(await subject.f.mySetLimit(a, { limit: mine.controls!.limit, period: mine.controls!.period })).limit;
    expect(again).toEqual(mine);
  });

  it("SetExtension takes an extension read from a row", async () => {
    const a = newAppId();
    const extended = unwrap(await admin.setExtension(subject.userId, a, { limit: UNLIMITED, expiresAt: inFuture() })).limit;
    expect(extended.controls?.extension).toEqual({ limit: UNLIMITED, expiresAt: inFuture(), reason: "" });
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.setExtension(subject.userId, a, extended.controls!.extension!)).limit).toEqual(extended);
  });

  it("app caps and the tenant default take their controls as read, and an unchanged set changes nothing (updatedAt too)", async () => {
    const a = newAppId();
    const expiresAt = inFuture(HOUR);
    const cap = unwrap(await admin.capSet(a, { controls: { extension: { limit: amount("2"), expiresAt }, suspension: {} } })).appCap;
    expect(cap.controls).toEqual(shown({ extension: { limit: amount("2"), expiresAt }, suspension: { suspendedAt: iso(ts.clock.now()) } }));
    // Lapsed by now: accepted only because it is the stored one, though read with its "" reason and null arms.
    ts.clock.advance(2 * HOUR);
    expect(unwrap(await admin.capSet(a, { controls: cap.controls })).appCap).toEqual(cap);

    const policy = unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: { limit: BLOCKED, suspension: {} } } })).fundPolicy;
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: policy.currencyCode, defaultControls: policy.defaultControls } })).fundPolicy).toEqual(policy);
    unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: null } }));
  });
});
