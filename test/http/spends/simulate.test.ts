// SpendService.Simulate through HTTP: the decision Authorize would make now (approved and each
// decline cause, with its trace), the window's usage now, nothing written, the access and the
// refusals of Authorize, and a property: over random limits, periods, amounts and existing spends,
// Simulate then Authorize agree when nothing changed between them.
import fc from "fast-check";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { withDatabase } from "../../support/old-database.js";
import type { TestServer } from "../../support/server.js";
import { BLOCKED, DAY, expectError, UNLIMITED, type Funds, type Schemas } from "../limits/helpers.js";
import { amount, appWithLimit, authorized, money, newAppId, spends, spendServerForFile, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };

spendServerForFile((server) => void ({ ts, admin, spend, subject } = server));

type Simulation = Schemas["SpendServiceSimulateResponse"];
type Body = { userId: string; appId: string; amount: unknown; holdSeconds?: number; capture?: boolean; metadata?: object };

const NOV = { windowStart: "2026-11-01T00:00:00.000Z", windowEnd: "2026-12-01T00:00:00.000Z" };
const body = (appId: string, units: string, extra: object = {}): Body => ({ userId: subject.userId, appId, amount: money(units), ...extra });

async function simulated(b: Body, s: Spends = spend): Promise<Simulation> {
  const r = await s.simulate(b);
  expect(r.response.status, JSON.stringify(r.error)).toBe(200);
  return unwrap(r);
}

/** Simulate, then Authorize with the same body: the decision must be the same, the usage before it the window's. */
async function expectAgreement(b: Body): Promise<Simulation> {
  const sim = await simulated(b);
  const r = await spend.authorize(b);
  expect(r.response.status, JSON.stringify(r.error)).toBe(200);
  const { authorization } = unwrap(r);
  expect(sim.decision).toEqual(authorization.decision);
  expect(sim.usage).toMatchObject({ windowStart: authorization.windowStart, windowEnd: authorization.windowEnd });
  return sim;
}

/** The rows a Simulate must not touch, whole: spends, their ledger and usage, kept answers, fund-event runs and firings, the audit trail. */
const WRITTEN = ["spend_authorizations", "spend_ledger", "spend_usage", "idempotency_records", "automation_executions", "fund_threshold_firings"] as const;
const json = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === "bigint" ? x.toString() : x));
const written = () =>
  withDatabase(ts.databaseUrl, async (db) => {
    const tables: Record<string, string[]> = {};
    for (const table of WRITTEN) tables[table] = (await db.selectFrom(table).selectAll().execute()).map(json);
    // On SQLite the audit inbox's rows move to audit_events in the background: the two together.
    tables.audit = [...(await db.selectFrom("audit_events").selectAll().execute()), ...(await db.selectFrom("audit_inbox").selectAll().execute())].map(json).sort();
    return tables;
  });

/** The usage's count fields when no count is in force. */
const NO_COUNT = { maxAuthorizations: null, authorizationsRemaining: null };

describe("Simulate answers the decision Authorize would make now", () => {
  it("approved: the decision with its trace and the usage after it, and the usage now (you can spend 40 more this month)", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, body(app, "40", { capture: true }));
    await authorized(spend, body(app, "20"));
    const sim = await simulated(body(app, "15"));
    expect(sim).toEqual({
      decision: {
        approved: true,
        cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED",
        scope: "SCOPE_SUBJECT_APP",
        period: "PERIOD_KIND_MONTHLY",
        trace: [
          "SCOPE_SUBJECT_APP: base limit USD 100 per PERIOD_KIND_MONTHLY by default -> limit",
          `window ${NOV.windowStart}..${NOV.windowEnd}: spent USD 40 + held USD 20 + USD 15 <= USD 100 -> approve`,
        ],
        usage: { ...NOV, spent: money("40"), held: money("35"), limit: money("100"), remaining: money("25"), ...NO_COUNT, authorizations: "3" },
      },
      usage: { ...NOV, spent: money("40"), held: money("20"), limit: money("100"), remaining: money("40"), ...NO_COUNT, authorizations: "2" },
    });
    await expectAgreement(body(app, "15"));
  });

  it("capture true: the approved amount would be spent, not held", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    const sim = await expectAgreement(body(app, "4", { capture: true }));
    expect(sim.usage).toMatchObject({ spent: money("0"), held: money("0") });
    expect(sim.decision.usage).toMatchObject({ spent: money("4"), held: money("0"), remaining: money("6") });
    expect((await simulated(body(app, "1", { capture: true }))).decision.usage).toMatchObject({ spent: money("5"), held: money("0"), remaining: money("5") });
  });

  it("declines LIMIT_EXCEEDED, SUSPENDED, BLOCKED and NO_LIMIT as Authorize does, and the app cap decides alike", async () => {
    const over = await appWithLimit(admin, subject.userId, "10");
    await authorized(spend, body(over, "7"));
    expect((await expectAgreement(body(over, "3", { amount: money("3", 1) }))).decision).toMatchObject({ approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" });

    const suspended = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_WEEKLY");
    await authorized(spend, body(suspended, "5", { capture: true }));
    unwrap(await admin.suspend(subject.userId, suspended, { reason: "card reported lost" }));
    const s = await expectAgreement(body(suspended, "1"));
    expect(s).toMatchObject({
      decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_SUSPENDED", period: "PERIOD_KIND_WEEKLY", trace: ['SCOPE_SUBJECT_APP: suspended ("card reported lost") -> deny'] },
      usage: { windowStart: "2026-11-16T00:00:00.000Z", spent: money("5"), held: money("0"), limit: null, remaining: null },
    });

    const blocked = await appWithLimit(admin, subject.userId, BLOCKED);
    expect((await expectAgreement(body(blocked, "1"))).decision.cause).toBe("SPEND_DECLINE_CAUSE_BLOCKED");
    expect((await expectAgreement(body(newAppId(), "1"))).decision).toMatchObject({ cause: "SPEND_DECLINE_CAUSE_NO_LIMIT", scope: "SCOPE_UNSPECIFIED" });

    const capped = newAppId();
    unwrap(await admin.capSet(capped, { controls: { limit: amount("5"), period: "PERIOD_KIND_DAILY" } }));
    expect((await expectAgreement(body(capped, "5"))).decision).toMatchObject({ approved: true, scope: "SCOPE_APP_CAP", period: "PERIOD_KIND_DAILY" });
    expect((await expectAgreement(body(capped, "1"))).decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");
  });

  it("unlimited approves; a sum past int64 is 409 USAGE_OUT_OF_RANGE, as Authorize answers it", async () => {
    const app = await appWithLimit(admin, subject.userId, UNLIMITED);
    await authorized(spend, body(app, "0", { amount: money("9223372036", 854_775_807), capture: true }));
    const sim = await spend.simulate(body(app, "0", { amount: money("0", 1) }));
    const auth = await spend.authorize(body(app, "0", { amount: money("0", 1) }));
    expectError(sim, 409, "USAGE_OUT_OF_RANGE");
    expectError(auth, 409, "USAGE_OUT_OF_RANGE");
    expect(sim.error).toMatchObject({ code: (auth.error as { code: number }).code, message: (auth.error as { message: string }).message });
  });

  it("counts expired holds out, as Authorize does, in a window whose row a period change left unwritten", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, body(app, "30", { holdSeconds: 60 }));
    await authorized(spend, body(app, "10", { capture: true }));
    ts.clock.advance(120_000);
    try {
      unwrap(await admin.setLimit(subject.userId, app, { limit: amount("50"), period: "PERIOD_KIND_WEEKLY" }));
      const before = await written();
      const sim = await simulated(body(app, "40"));
      expect(sim.usage).toEqual({ windowStart: "2026-11-16T00:00:00.000Z", windowEnd: "2026-11-23T00:00:00.000Z", spent: money("10"), held: money("0"), limit: money("50"), remaining: money("40"), ...NO_COUNT, authorizations: "1" });
      // The weekly window's row is not created by a simulation.
      expect(await written()).toEqual(before);
      expect(sim.decision.approved).toBe(true);
      await expectAgreement(body(app, "40"));
    } finally {
      ts.clock.advance(-120_000);
    }
  });
});

describe("Simulate writes nothing", () => {
  it("no authorization, ledger entry, usage change, kept answer, fund event or audit event; List and GetEffective unchanged", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, body(app, "25"));
    const list = unwrap(await spend.list({ app_id: app })).list;
    const effective = unwrap(await admin.effective(subject.userId, app)).effective;
    const before = await written();
    for (const extra of [{}, { capture: true }, { amount: money("500") }, { holdSeconds: 3600 }]) await simulated(body(app, "10", extra));
    await simulated(body(newAppId(), "1"));
    expect(await written()).toEqual(before);
    expect(unwrap(await spend.list({ app_id: app })).list).toEqual(list);
    expect(unwrap(await admin.effective(subject.userId, app)).effective).toEqual(effective);
  });
});

describe("Simulate takes no lock longer than a read", () => {
  // PostgreSQL, where a read and a lock are told apart by other connections (on SQLite every request,
  // GetEffective's plain read too, waits for another process's write lock of the file).
  it.runIf(testDialect() === "postgres")("answers while another connection holds the subject and app's spend lock and keeps the spend tables from any write or FOR UPDATE", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    await authorized(spend, body(app, "60"));
    const sim = await withDatabase(ts.databaseUrl, async (db) => {
      await sql`begin`.execute(db);
      await sql`select spend_lock_subject_app(${subject.userId}, ${app})`.execute(db);
      // EXCLUSIVE lets a plain read pass, and nothing else.
      await sql`lock table spend_usage, spend_authorizations, spend_ledger, idempotency_records in exclusive mode`.execute(db);
      try {
        const late = new Promise<"waited">((resolve) => setTimeout(() => resolve("waited"), 5_000));
        return await Promise.race([spend.simulate(body(app, "40")), late]);
      } finally {
        await sql`rollback`.execute(db);
      }
    });
    expect(sim).not.toBe("waited");
    expect(unwrap(sim as Awaited<ReturnType<Spends["simulate"]>>).usage.remaining).toEqual(money("40"));
  });
});

describe("Simulate is allowed to whoever may Authorize that subject and app", () => {
  it("an app service for its bound apps only (403 APP_NOT_ALLOWED otherwise); a user never (403 ROLE_NOT_ALLOWED)", async () => {
    const mine = await appWithLimit(admin, subject.userId, "100");
    const theirs = await appWithLimit(admin, subject.userId, "100");
    const service = spends((await ts.userClient(["ROLE_APP_SERVICE"], "Backend", { appIds: [mine] })).client);
    expect((await simulated(body(mine, "1"), service)).decision.approved).toBe(true);
    for (const s of [service.simulate, service.authorize]) {
      const r = await s(body(theirs, "1"));
      expectError(r, 403, "APP_NOT_ALLOWED");
      expect((r.error as { details: { metadata?: object }[] }).details[0]!.metadata).toEqual({ appId: theirs });
    }
    expectError(await subject.s.simulate(body(mine, "1")), 403, "ROLE_NOT_ALLOWED");
    expectError(await subject.s.authorize(body(mine, "1")), 403, "ROLE_NOT_ALLOWED");
  });
});

describe("Simulate refuses what Authorize refuses, alike", () => {
  it("400s and 404 with Authorize's reason and message", async () => {
    const app = await appWithLimit(admin, subject.userId, "100");
    const cases: object[] = [
      { amount: money("0") },
      { amount: money("1", 0, "EUR") },
      { amount: money("9223372036", 854_775_808) },
      { capture: true, holdSeconds: 60 },
      { holdSeconds: 604_801 },
      { holdSeconds: 0 },
      { unknownField: 1 },
      { amount: { currencyCode: "USD", units: 1, nanos: 0 } },
      { userId: "noSuchUser000001" },
    ];
    for (const extra of cases) {
      const b = body(app, "1", extra);
      const [sim, auth] = [await spend.simulate(b), await spend.authorize(b)];
      expect(sim.response.status, JSON.stringify(extra)).toBe(auth.response.status);
      expect(sim.response.status, JSON.stringify(extra)).toBeGreaterThanOrEqual(400);
      expect(sim.error, JSON.stringify(extra)).toEqual({ ...(auth.error as object), details: expect.any(Array) });
      const { details: simDetails } = sim.error as { details: { "@type": string }[] };
      const { details: authDetails } = auth.error as { details: { "@type": string }[] };
      const withoutRequest = (d: { "@type": string }[]) => d.filter((x) => !x["@type"].endsWith("RequestInfo"));
      expect(withoutRequest(simDetails)).toEqual(withoutRequest(authDetails));
    }
    expect(unwrap(await spend.list({ app_id: app })).list).toEqual([]);
  });
});

/** A random case: the limit, the spends made before, then the amount asked. */
const caseArb = fc.record({
  limit: fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: 0, max: 200 }).map((units) => amount(String(units))) },
    { weight: 1, arbitrary: fc.constant(UNLIMITED) },
    { weight: 1, arbitrary: fc.constant(BLOCKED) },
  ),
  period: fc.constantFrom("PERIOD_KIND_DAILY", "PERIOD_KIND_WEEKLY", "PERIOD_KIND_MONTHLY", "PERIOD_KIND_QUARTERLY", "PERIOD_KIND_YEARLY"),
  spends: fc.array(fc.record({ units: fc.integer({ min: 1, max: 80 }), nanos: fc.constantFrom(0, 500_000_000, 1), capture: fc.boolean(), holdSeconds: fc.integer({ min: 1, max: 7200 }) }), { maxLength: 4 }),
  /** Seconds the clock moves after the spends: some holds expire. */
  later: fc.integer({ min: 0, max: 7200 }),
  /** A period the limit is changed to after the spends (a window whose row is not written yet), or none. */
  newPeriod: fc.option(fc.constantFrom("PERIOD_KIND_DAILY", "PERIOD_KIND_WEEKLY", "PERIOD_KIND_YEARLY"), { nil: undefined }),
  suspended: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  /** The app cap's count of authorizations per window, or none. */
  maxAuthorizations: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
  ask: fc.record({ units: fc.integer({ min: 0, max: 250 }), nanos: fc.constantFrom(0, 1, 999_999_999), capture: fc.boolean() }),
});

describe("property: Simulate then Authorize agree when nothing changed between them", () => {
  it("over random limits, counts, periods, amounts and existing holds and captures", async () => {
    let moved = 0;
    const causes = new Set<string>();
    try {
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const app = await appWithLimit(admin, subject.userId, c.limit, c.period);
          if (c.maxAuthorizations) unwrap(await admin.capSet(app, { controls: { maxAuthorizations: c.maxAuthorizations } }));
          for (const s of c.spends) {
            await authorized(spend, body(app, String(s.units), { amount: money(String(s.units), s.nanos), ...(s.capture ? { capture: true } : { holdSeconds: s.holdSeconds }) }));
          }
          ts.clock.advance(c.later * 1000);
          moved += c.later * 1000;
          if (c.newPeriod) unwrap(await admin.setLimit(subject.userId, app, { limit: c.limit, period: c.newPeriod }));
          if (c.suspended) unwrap(await admin.suspend(subject.userId, app, { reason: "paused" }));
          const ask = body(app, String(c.ask.units), { amount: money(String(c.ask.units), c.ask.nanos), ...(c.ask.capture ? { capture: true } : {}) });
          const sim = await expectAgreement(ask);
          causes.add(sim.decision.cause);
          // The usage now is that of the window the decision is taken in.
          expect(sim.usage.windowStart).toBe(sim.decision.usage.windowStart);
        }),
        { numRuns: 40, seed: 46, endOnFailure: true },
      );
    } finally {
      ts.clock.advance(-moved);
    }
    // The cases reached approvals and every kind of decline the limits drawn can make.
    expect([...causes].sort()).toEqual(["SPEND_DECLINE_CAUSE_BLOCKED", "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", "SPEND_DECLINE_CAUSE_MAX_AUTHORIZATIONS_REACHED", "SPEND_DECLINE_CAUSE_SUSPENDED", "SPEND_DECLINE_CAUSE_UNSPECIFIED"]);
  }, 120_000);

  it("agree at the limit's edges, again and again in one window", async () => {
    const app = await appWithLimit(admin, subject.userId, "10");
    for (const units of ["3", "3", "3", "1", "1", "0"]) {
      const nanos = units === "0" ? 1 : 0;
      await expectAgreement(body(app, units, { amount: money(units, nanos) }));
    }
    ts.clock.advance(DAY * 40);
    try {
      expect((await expectAgreement(body(app, "10"))).usage).toMatchObject({ spent: money("0"), held: money("0"), remaining: money("10") });
    } finally {
      ts.clock.advance(-DAY * 40);
    }
  });
});
