// Every statement the spend operations run on the spend tables seeks an index (SQLite's EXPLAIN
// QUERY PLAN of the statements as the server really ran them, recorded as it prepared them): no
// decision, change, List, GetEffective or currency check reads a spend table whole, none reads all
// of a window's open holds (only those between two instants: migration 0016), and List reads its
// index in the answer's order (no sort) except over several apps, where it seeks each.
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { expectError } from "../limits/helpers.js";
import { appWithLimit, authorized, money, spends, startSpendServer, type SpendServer } from "./helpers.js";

/** The SQL of every statement prepared on a spend table, and the connection it was prepared on. */
const recorded = new Map<string, SQLite.Database>();
const prepare = SQLite.prototype.prepare;

let server: SpendServer;

describe.skipIf(testDialect() !== "sqlite")("the spend statements' query plans (SQLite)", () => {
  beforeAll(async () => {
    SQLite.prototype.prepare = function (this: SQLite.Database, source: string) {
      if (/spend_(authorizations|usage|ledger)/.test(source)) recorded.set(source, this);
      return prepare.call(this, source);
    } as typeof prepare;
    server = await startSpendServer();
    // The migrations' statements (a backfill reads its table whole, once) are not the server's.
    recorded.clear();
  });
  afterAll(async () => {
    SQLite.prototype.prepare = prepare;
    await server?.ts.stop();
  });

  it("seek an index in every decision, change, List, GetEffective and the currency check", async () => {
    const { ts, admin, spend, subject } = server;
    const app = await appWithLimit(admin, subject.userId, "10");
    const other = await appWithLimit(admin, subject.userId, "10");
    const usd = (units: string) => money(units);
    const held = await authorized(spend, { userId: subject.userId, appId: app, amount: usd("2") });
    const released = await authorized(spend, { userId: subject.userId, appId: app, amount: usd("1") });
    const captured = await authorized(spend, { userId: subject.userId, appId: other, amount: usd("3"), capture: true });
    unwrap(await spend.authorize({ userId: subject.userId, appId: app, amount: usd("100") }));
    unwrap(await spend.capture(held.id, { amount: usd("1") }));
    unwrap(await spend.release(released.id));
    unwrap(await spend.reverse(captured.id, { amount: usd("1") }));
    unwrap(await spend.get(held.id));
    unwrap(await admin.effective(subject.userId, app));

    // More than a page of the smallest size, so that a second page is read.
    for (let i = 0; i < 8; i++) await authorized(spend, { userId: subject.userId, appId: other, amount: money("0", 10_000_000) });
    const first = unwrap(await spend.list({ page_size: 1 }));
    expect(first.nextPageToken).not.toBe("");
    unwrap(await spend.list({ page_size: 1, page_token: first.nextPageToken }));
    unwrap(await spend.list({ user_id: subject.userId }));
    unwrap(await spend.list({ app_id: app, state: "SPEND_AUTHORIZATION_STATE_PENDING" }));
    unwrap(await spend.list({ user_id: subject.userId, app_id: app, window_start: held.windowStart }));
    const service = await ts.userClient(["ROLE_APP_SERVICE"], "two apps", { appIds: [app, other] });
    unwrap(await spends(service.client).list({}));
    unwrap(await spends(service.client).list({ user_id: subject.userId }));
    expectError(await admin.policyUpdate({ fundPolicy: { currencyCode: "GBP", defaultControls: null }, updateMask: "currencyCode" }), 409, "CURRENCY_IN_USE");

    const plans = [...recorded].filter(([source]) => !/^\s*(insert|create|pragma)/i.test(source) || /on conflict|select/i.test(source));
    // Each kind of statement was seen: the lock and its sweep, the counters' update, the row by id, the List variants, the currency check.
    expect(plans.length).toBeGreaterThanOrEqual(10);
    for (const [source, db] of plans) {
      // A plan does not depend on the values bound (nulls here), only on the statement.
      const nulls = Array.from(source.matchAll(/\?/g), () => null);
      const plan = (prepare.call(db, `explain query plan ${source}`).all(nulls) as { detail: string }[]).map((r) => r.detail);
      const what = `${source}\n  ${plan.join("\n  ")}`;
      if (process.env.SHOW_PLANS) console.log(what);
      // The unfiltered List walks the primary key from its end, in the answer's order, LIMIT rows;
      // the currency check reads the first row of the table, if any.
      const unfiltered = /from "spend_authorizations"( where "id" < \?)? order by "id" desc limit \?$/.test(source) || /^select "id" from "spend_authorizations" limit \?$/.test(source);
      for (const step of plan) {
        if (/^SCAN spend_/.test(step)) expect(unfiltered, `a whole spend table or index read:\n${what}`).toBe(true);
        // The holds are read between two instants (a sweep, a correction), never all a window's open holds.
        if (/spend_authorizations_held/.test(step)) expect(step, `an unbounded range of holds:\n${what}`).toMatch(/expires_at>\? AND expires_at<\?\)$/);
      }
      const severalApps = /"app_id" in \(\?, \?/.test(source);
      if (/order by/.test(source) && !severalApps) expect(plan.join(" "), `List sorts instead of reading in order:\n${what}`).not.toMatch(/TEMP B-TREE/);
    }
  });
});
