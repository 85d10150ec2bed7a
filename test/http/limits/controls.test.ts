// SpendControls are not a oneof; per-row resolution and the layers (subject-app row, app cap, tenant
// default) through GetEffective, with time moved by the test clock; the life of a row (created,
// updated, removed, created afresh) and the 404s.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { amount, BLOCKED, DAY, expectError, HOUR, newAppId, startFundsServer, storedControls, UNLIMITED, type Funds, shown, iso } from "./helpers.js";

const TENANT = "tenant-acme";
let ts: TestServer;
let admin: Funds;
let subject: { userId: string; f: Funds };

beforeAll(async () => void ({ ts, admin, subject } = await startFundsServer({ TENANT_ID: TENANT })));
afterAll(async () => ts?.stop());

const now = () => iso(ts.clock.now());
const effective = async (appId: string) => unwrap(await admin.effective(subject.userId, appId)).effective;
const setDefault = async (defaultControls: unknown) =>
  unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls }, updateMask: "defaultControls" }));

describe("SpendControls fields are not a oneof: each operation changes its own field and keeps the others", () => {
  it("suspending keeps the limit, its period and the extension", async () => {
    const a = newAppId();
    const expiresAt = iso(ts.clock.now() + DAY);
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("250"), period: "PERIOD_KIND_WEEKLY" }));
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("500"), expiresAt, reason: "travel" }));
    const row = unwrap(await admin.suspend(subject.userId, a, { reason: "Card reported lost" })).limit!;
    expect(row.controls).toEqual(shown({
      limit: amount("250"),
      period: "PERIOD_KIND_WEEKLY",
      extension: { limit: amount("500"), expiresAt, reason: "travel" },
      suspension: { reason: "Card reported lost", suspendedAt: now() },
    }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_SUSPENSION", scope: "SCOPE_SUBJECT_APP", limit: null, period: null });
  });

  it("setting a limit keeps the suspension and the extension in place (a suspended row keeps denying)", async () => {
    const a = newAppId();
    const expiresAt = iso(ts.clock.now() + DAY);
    unwrap(await admin.suspend(subject.userId, a, { reason: "hold" }));
    unwrap(await admin.setExtension(subject.userId, a, { limit: UNLIMITED, expiresAt }));
    const suspendedAt = now();
    ts.clock.advance(HOUR);
    const row = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("10"), period: "PERIOD_KIND_DAILY" })).limit;
    expect(row.controls).toEqual(shown({
      limit: amount("10"),
      period: "PERIOD_KIND_DAILY",
      extension: { limit: UNLIMITED, expiresAt },
      suspension: { reason: "hold", suspendedAt },
    }));
    // The subject's own SetLimit is the same row and keeps them too.
    const mine = unwrap(await subject.f.mySetLimit(a, { limit: amount("11") })).limit;
    expect(mine.controls).toEqual(shown({ limit: amount("11"), extension: { limit: UNLIMITED, expiresAt }, suspension: { reason: "hold", suspendedAt } }));
    expect((await effective(a)).cause).toBe("CAUSE_SUSPENSION");
  });

  it("unsuspending restores exactly the limit the suspension froze", async () => {
    const a = newAppId();
    const before = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("250", 500_000_000), period: "PERIOD_KIND_QUARTERLY" })).limit;
    const limitBefore = await effective(a);
    unwrap(await admin.suspend(subject.userId, a, {}));
    expect((await effective(a)).decision).toBe("EFFECTIVE_DECISION_DENY");
    const after = unwrap(await admin.unsuspend(subject.userId, a)).limit!;
    expect(after.controls).toEqual(before.controls);
    expect(await effective(a)).toEqual(limitBefore);
    expect(limitBefore).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", cause: "CAUSE_LIMIT", limit: amount("250", 500_000_000), period: "PERIOD_KIND_QUARTERLY" });
  });

  it("a limit set while suspended is the one unsuspend restores", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("1") }));
    unwrap(await admin.suspend(subject.userId, a, {}));
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("2"), period: "PERIOD_KIND_DAILY" }));
    unwrap(await admin.unsuspend(subject.userId, a));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", limit: amount("2"), period: "PERIOD_KIND_DAILY" });
  });

  it("suspending again replaces the reason and keeps the original suspendedAt; {} suspends without a reason", async () => {
    const a = newAppId();
    const first = unwrap(await admin.suspend(subject.userId, a, {})).limit!;
    expect(first.controls).toEqual(shown({ suspension: { suspendedAt: now() } }));
    const at = now();
    ts.clock.advance(HOUR);
    const second = unwrap(await admin.suspend(subject.userId, a, { reason: "second" })).limit!;
    expect(second.controls).toEqual(shown({ suspension: { reason: "second", suspendedAt: at } }));
    expect(second.updatedAt).toBe(now());
  });

  it("unsuspending a row that is not suspended answers it unchanged", async () => {
    const a = newAppId();
    const row = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("3") })).limit;
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.unsuspend(subject.userId, a)).limit).toEqual(row);
    expect(unwrap(await admin.get(subject.userId, a)).limit).toEqual(row);
  });

  it("clearing the extension keeps the limit and the suspension; a row without one answers unchanged", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("5") }));
    unwrap(await admin.suspend(subject.userId, a, { reason: "s" }));
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("6"), expiresAt: iso(ts.clock.now() + DAY) }));
    const cleared = unwrap(await admin.clearExtension(subject.userId, a)).limit!;
    expect(cleared.controls).toEqual(shown({ limit: amount("5"), suspension: { reason: "s", suspendedAt: now() } }));
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.clearExtension(subject.userId, a)).limit).toEqual(cleared);
  });

  it("a new extension replaces the old one and never changes the period", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("100"), period: "PERIOD_KIND_WEEKLY" }));
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("200"), expiresAt: iso(ts.clock.now() + DAY), reason: "one" }));
    const expiresAt = iso(ts.clock.now() + 2 * DAY);
    const row = unwrap(await admin.setExtension(subject.userId, a, { limit: amount("300"), expiresAt })).limit;
    expect(row.controls).toEqual(shown({ limit: amount("100"), period: "PERIOD_KIND_WEEKLY", extension: { limit: amount("300"), expiresAt } }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", cause: "CAUSE_EXTENSION", limit: amount("300"), period: "PERIOD_KIND_WEEKLY" });
  });

  it("the subject's ClearLimit removes the limit and its period only", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("5"), period: "PERIOD_KIND_DAILY" }));
    unwrap(await admin.suspend(subject.userId, a, { reason: "admin hold" }));
    const row = unwrap(await subject.f.myClearLimit(a)).limit!;
    expect(row.controls).toEqual(shown({ suspension: { reason: "admin hold", suspendedAt: now() } }));
    ts.clock.advance(HOUR);
    // No base limit left: unchanged.
    expect(unwrap(await subject.f.myClearLimit(a)).limit).toEqual(row);
  });

  it("a lapsed extension stays stored, and the row falls back to its own base limit, not to the next layer", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: UNLIMITED } }));
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("50"), period: "PERIOD_KIND_MONTHLY" }));
    const expiresAt = iso(ts.clock.now() + HOUR);
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("80"), expiresAt }));
    expect(await effective(a)).toMatchObject({ cause: "CAUSE_EXTENSION", limit: amount("80"), scope: "SCOPE_SUBJECT_APP", evaluatedAt: now() });

    ts.clock.advance(HOUR - 1);
    expect((await effective(a)).cause).toBe("CAUSE_EXTENSION");
    ts.clock.advance(1); // expiresAt reached
    const lapsed = await effective(a);
    expect(lapsed).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", cause: "CAUSE_LIMIT", limit: amount("50"), scope: "SCOPE_SUBJECT_APP", evaluatedAt: expiresAt });
    expect(await storedControls(admin, subject.userId, a)).toEqual(shown({ limit: amount("50"), period: "PERIOD_KIND_MONTHLY", extension: { limit: amount("80"), expiresAt } }));
    expect(unwrap(await subject.f.myGet(a)).limit.controls?.extension).toEqual({ limit: amount("80"), expiresAt, reason: "" });
  });

  it("a row holding only a lapsed extension states no opinion", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: amount("70") } }));
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("90"), expiresAt: iso(ts.clock.now() + HOUR) }));
    expect((await effective(a)).scope).toBe("SCOPE_SUBJECT_APP");
    ts.clock.advance(2 * HOUR);
    expect(await effective(a)).toMatchObject({ scope: "SCOPE_APP_CAP", limit: amount("70") });
  });

  it("concurrent changes of one row are applied one after another, none lost", async () => {
    for (let i = 0; i < 5; i++) {
      const a = newAppId();
      const expiresAt = iso(ts.clock.now() + DAY);
      await Promise.all([
        admin.setLimit(subject.userId, a, { limit: amount("1") }),
        admin.suspend(subject.userId, a, { reason: "x" }),
        admin.setExtension(subject.userId, a, { limit: amount("2"), expiresAt }),
        subject.f.mySetLimit(newAppId(), { limit: amount("3") }),
      ]);
      const controls = await storedControls(admin, subject.userId, a);
      expect(controls).toMatchObject({ limit: amount("1"), extension: { limit: amount("2"), expiresAt }, suspension: { reason: "x" } });
    }
  });
});

describe("the life of a row", () => {
  it("tenantId is the configured tenant; createdAt stays, updatedAt follows changes; deletedAt is null while live", async () => {
    const a = newAppId();
    const created = now();
    const row = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("1") })).limit;
    expect(row).toEqual({ appId: a, userId: subject.userId, tenantId: TENANT, controls: shown({ limit: amount("1") }), createdAt: created, updatedAt: created, deletedAt: null });
    ts.clock.advance(HOUR);
    const changed = unwrap(await admin.suspend(subject.userId, a, {})).limit!;
    expect(changed).toMatchObject({ createdAt: created, updatedAt: now(), deletedAt: null });
    // The same limit again changes nothing, so updatedAt stays.
    ts.clock.advance(HOUR);
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("1") }));
    expect(unwrap(await admin.get(subject.userId, a)).limit.updatedAt).toBe(changed.updatedAt);
    // The subject sees the same row without user id, tenant id or deletedAt.
    expect(unwrap(await subject.f.myGet(a)).limit).toEqual({ appId: a, controls: changed.controls, createdAt: created, updatedAt: changed.updatedAt });
  });

  it("app caps: tenantId, createdAt and updatedAt maintained", async () => {
    const a = newAppId();
    const created = now();
    const cap = unwrap(await admin.capSet(a, { controls: { limit: amount("1") } })).appCap;
    expect(cap).toEqual({ appId: a, tenantId: TENANT, controls: shown({ limit: amount("1") }), createdAt: created, updatedAt: created, deletedAt: null });
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.capSet(a, { controls: { limit: amount("2") } })).appCap).toMatchObject({ createdAt: created, updatedAt: now() });
  });

  it("Suspend and SetExtension create the row when absent", async () => {
    const a = newAppId();
    expect(unwrap(await admin.suspend(subject.userId, a, { reason: "r" })).limit!.controls).toEqual(shown({ suspension: { reason: "r", suspendedAt: now() } }));
    const b = newAppId();
    const expiresAt = iso(ts.clock.now() + DAY);
    expect(unwrap(await admin.setExtension(subject.userId, b, { limit: amount("4"), expiresAt })).limit.controls).toEqual(shown({ extension: { limit: amount("4"), expiresAt } }));
  });

  it("clearing the last control removes the row and answers null: Unsuspend, ClearExtension, ClearLimit", async () => {
    const [a, b, c] = [newAppId(), newAppId(), newAppId()];
    unwrap(await admin.suspend(subject.userId, a, {}));
    unwrap(await admin.setExtension(subject.userId, b, { limit: amount("1"), expiresAt: iso(ts.clock.now() + DAY) }));
    unwrap(await subject.f.mySetLimit(c, { limit: amount("1") }));
    expect(unwrap(await admin.unsuspend(subject.userId, a))).toEqual({ limit: null });
    expect(unwrap(await admin.clearExtension(subject.userId, b))).toEqual({ limit: null });
    expect(unwrap(await subject.f.myClearLimit(c))).toEqual({ limit: null });
    for (const app of [a, b, c]) {
      expectError(await admin.get(subject.userId, app), 404, "ROW_NOT_FOUND");
      expectError(await subject.f.myGet(app), 404, "ROW_NOT_FOUND");
      expect((await effective(app)).cause).toBe("CAUSE_NO_LIMIT");
    }
    const listed = unwrap(await admin.search({ userIds: [subject.userId], appIds: [a, b, c] }));
    expect(listed.list).toEqual([]);
  });

  it("Delete removes the row with all its controls; it is no longer listed or resolved; a later SetLimit creates a fresh row", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: amount("900") } }));
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("9"), period: "PERIOD_KIND_DAILY" }));
    unwrap(await admin.suspend(subject.userId, a, {}));
    const createdAt = now();
    expect((await effective(a)).scope).toBe("SCOPE_SUBJECT_APP");

    expect(unwrap(await admin.delete(subject.userId, a))).toEqual({});
    expectError(await admin.get(subject.userId, a), 404, "ROW_NOT_FOUND");
    expectError(await admin.delete(subject.userId, a), 404, "ROW_NOT_FOUND");
    expect(unwrap(await admin.search({ userIds: [subject.userId], appIds: [a] })).list).toEqual([]);
    expect(unwrap(await subject.f.myList({ page_size: 100 })).list.map((v) => v.limit.appId)).not.toContain(a);
    expect(await effective(a)).toMatchObject({ scope: "SCOPE_APP_CAP", limit: amount("900") });

    ts.clock.advance(HOUR);
    const fresh = unwrap(await admin.setLimit(subject.userId, a, { limit: amount("10") })).limit;
    expect(fresh).toMatchObject({ controls: { limit: amount("10") }, createdAt: now(), updatedAt: now(), deletedAt: null });
    expect(fresh.createdAt).not.toBe(createdAt);
  });

  it("app cap Delete: no longer listed or resolved; a second Delete is 404; Set creates a fresh cap", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: BLOCKED } }));
    expect((await effective(a)).cause).toBe("CAUSE_BLOCKED");
    expect(unwrap(await admin.capDelete(a))).toEqual({});
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");
    expectError(await admin.capDelete(a), 404, "APP_CAP_NOT_FOUND");
    expect((await effective(a)).cause).toBe("CAUSE_NO_LIMIT");
    ts.clock.advance(HOUR);
    expect(unwrap(await admin.capSet(a, { controls: { limit: amount("1") } })).appCap).toMatchObject({ createdAt: now(), deletedAt: null });
  });
});

describe("404s", () => {
  const unknownUser = "ZZZZZZZZZZZZZZZZ";

  it("an unknown user is 404 USER_NOT_FOUND at every SubjectAppLimitService operation on a row, and nothing is stored", async () => {
    const a = newAppId();
    const answers = [
      await admin.get(unknownUser, a),
      await admin.setLimit(unknownUser, a, { limit: amount("1") }),
      await admin.suspend(unknownUser, a, {}),
      await admin.unsuspend(unknownUser, a),
      await admin.setExtension(unknownUser, a, { limit: amount("1"), expiresAt: iso(ts.clock.now() + DAY) }),
      await admin.clearExtension(unknownUser, a),
      await admin.delete(unknownUser, a),
      await admin.effective(unknownUser, a),
    ];
    for (const r of answers) expectError(r, 404, "USER_NOT_FOUND");
    expect(unwrap(await admin.search({ userIds: [unknownUser] }))).toEqual({ list: [], nextPageToken: "" });
  });

  it("no live row is 404 ROW_NOT_FOUND for Get, Unsuspend, ClearExtension, Delete and the subject's Get and ClearLimit", async () => {
    const a = newAppId();
    for (const r of [
      await admin.get(subject.userId, a),
      await admin.unsuspend(subject.userId, a),
      await admin.clearExtension(subject.userId, a),
      await admin.delete(subject.userId, a),
      await subject.f.myGet(a),
      await subject.f.myClearLimit(a),
    ]) {
      expectError(r, 404, "ROW_NOT_FOUND");
    }
    expect(await storedControls(admin, subject.userId, a)).toBeNull();
  });

  it("an app without a cap is 404 APP_CAP_NOT_FOUND; GetEffective never 404s for an app", async () => {
    const a = newAppId();
    expectError(await admin.capGet(a), 404, "APP_CAP_NOT_FOUND");
    expectError(await admin.capDelete(a), 404, "APP_CAP_NOT_FOUND");
    expect(unwrap(await subject.f.myEffective(a)).effective.cause).toBe("CAUSE_NO_LIMIT");
    expect((await effective(a)).cause).toBe("CAUSE_NO_LIMIT");
  });
});

describe("resolution through the layers (GetEffective)", () => {
  afterAll(async () => {
    await setDefault(null);
  });

  it("no opinion anywhere denies with CAUSE_NO_LIMIT and SCOPE_UNSPECIFIED, at the server's time", async () => {
    const a = newAppId();
    const e = await effective(a);
    expect(e).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", limit: null, period: null, scope: "SCOPE_UNSPECIFIED", cause: "CAUSE_NO_LIMIT", evaluatedAt: now() });
    expect(e.trace).toHaveLength(4);
  });

  it("the subject-app row decides first; then the app cap; then the tenant default", async () => {
    const a = newAppId();
    await setDefault({ limit: amount("1"), period: "PERIOD_KIND_YEARLY" });
    expect(await effective(a)).toMatchObject({ scope: "SCOPE_TENANT_DEFAULT", decision: "EFFECTIVE_DECISION_LIMIT", limit: amount("1"), period: "PERIOD_KIND_YEARLY", cause: "CAUSE_LIMIT" });
    unwrap(await admin.capSet(a, { controls: { limit: amount("2"), period: "PERIOD_KIND_QUARTERLY" } }));
    expect(await effective(a)).toMatchObject({ scope: "SCOPE_APP_CAP", limit: amount("2"), period: "PERIOD_KIND_QUARTERLY" });
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("3"), period: "PERIOD_KIND_DAILY" }));
    const e = await effective(a);
    expect(e).toMatchObject({ scope: "SCOPE_SUBJECT_APP", limit: amount("3"), period: "PERIOD_KIND_DAILY" });
    expect(e.trace).toHaveLength(1);
    expect(e.trace[0]).toMatch(/^SCOPE_SUBJECT_APP/);
    // The subject's own view resolves exactly the same.
    expect(unwrap(await subject.f.myEffective(a)).effective).toEqual(e);
    // Removing layers falls through again.
    unwrap(await admin.delete(subject.userId, a));
    expect((await effective(a)).scope).toBe("SCOPE_APP_CAP");
    unwrap(await admin.capDelete(a));
    expect((await effective(a)).scope).toBe("SCOPE_TENANT_DEFAULT");
    await setDefault(null);
    expect((await effective(a)).cause).toBe("CAUSE_NO_LIMIT");
  });

  it("blocked denies at its scope; a more specific layer with an opinion still decides", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: BLOCKED } }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_BLOCKED", scope: "SCOPE_APP_CAP", limit: BLOCKED, period: null });
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("5") }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", scope: "SCOPE_SUBJECT_APP" });
    unwrap(await admin.capSet(a, { controls: { limit: UNLIMITED } }));
    unwrap(await admin.setLimit(subject.userId, a, { limit: BLOCKED }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_BLOCKED", scope: "SCOPE_SUBJECT_APP", limit: BLOCKED });
  });

  it("unlimited admits with full accounting: decision UNLIMITED, no period", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: UNLIMITED, period: "PERIOD_KIND_DAILY" }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_UNLIMITED", limit: UNLIMITED, period: null, cause: "CAUSE_LIMIT", scope: "SCOPE_SUBJECT_APP" });
  });

  it("a suspension at any layer denies when that layer is reached", async () => {
    const a = newAppId();
    unwrap(await admin.capSet(a, { controls: { limit: amount("5"), suspension: { reason: "vendor review" } } }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_DENY", cause: "CAUSE_SUSPENSION", scope: "SCOPE_APP_CAP", limit: null });
    unwrap(await subject.f.mySetLimit(a, { limit: amount("1") }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_LIMIT", scope: "SCOPE_SUBJECT_APP" });
  });

  it("an amount with no period of its own takes the period of the next layer that states one, else monthly", async () => {
    const a = newAppId();
    unwrap(await subject.f.mySetLimit(a, { limit: amount("5") }));
    expect((await effective(a)).period).toBe("PERIOD_KIND_MONTHLY");
    await setDefault({ limit: amount("1"), period: "PERIOD_KIND_QUARTERLY" });
    expect((await effective(a)).period).toBe("PERIOD_KIND_QUARTERLY");
    unwrap(await admin.capSet(a, { controls: { limit: amount("9"), period: "PERIOD_KIND_WEEKLY" } }));
    expect(await effective(a)).toMatchObject({ scope: "SCOPE_SUBJECT_APP", limit: amount("5"), period: "PERIOD_KIND_WEEKLY" });
    unwrap(await subject.f.mySetLimit(a, { limit: amount("5"), period: "PERIOD_KIND_DAILY" }));
    expect((await effective(a)).period).toBe("PERIOD_KIND_DAILY");
    // An extension never changes the period.
    unwrap(await admin.setExtension(subject.userId, a, { limit: amount("50"), expiresAt: iso(ts.clock.now() + DAY) }));
    expect(await effective(a)).toMatchObject({ cause: "CAUSE_EXTENSION", limit: amount("50"), period: "PERIOD_KIND_DAILY" });
    await setDefault(null);
  });

  it("time moves: an extension applies until expiresAt, then the base limit; evaluatedAt follows the clock", async () => {
    const a = newAppId();
    unwrap(await admin.setLimit(subject.userId, a, { limit: amount("100") }));
    const expiresAt = ts.clock.now() + 3 * DAY;
    unwrap(await admin.setExtension(subject.userId, a, { limit: UNLIMITED, expiresAt: iso(expiresAt), reason: "quarter end" }));
    expect(await effective(a)).toMatchObject({ decision: "EFFECTIVE_DECISION_UNLIMITED", cause: "CAUSE_EXTENSION" });
    ts.clock.advance(2 * DAY);
    expect(unwrap(await subject.f.myEffective(a)).effective).toMatchObject({ decision: "EFFECTIVE_DECISION_UNLIMITED", evaluatedAt: now() });
    ts.clock.set(expiresAt);
    expect(unwrap(await subject.f.myEffective(a)).effective).toMatchObject({
      decision: "EFFECTIVE_DECISION_LIMIT",
      cause: "CAUSE_LIMIT",
      limit: amount("100"),
      period: "PERIOD_KIND_MONTHLY",
      evaluatedAt: iso(expiresAt),
    });
  });
});
