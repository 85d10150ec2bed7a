// PostgreSQL round trips of GetEffective (the administrator's and the caller's own), counted at the
// pg client as the server (in this process) sends them: one statement reads the user, the live row,
// the app cap and the usage of every period's window at the clock's instant (one snapshot, no
// transaction); the fund policy is the copy kept per process. Other connections (the workers) query
// meanwhile: only the connections that read a layer count, less the change watch's polls.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import type { Answer } from "./helpers.js";
import { appWithLimit, authorized, money, watchingQueries } from "../spends/helpers.js";

const watched = watchingQueries();
/** The connections that read a layer. */
const TOUCHING_LAYER = /subject_app_limits/;

describe.skipIf(testDialect() !== "postgres")("GetEffective's round trips (PostgreSQL)", () => {
  it.each([
    { what: "SubjectAppLimitService.GetEffective", call: (app: string) => watched.server.admin.effective(watched.server.subject.userId, app) },
    { what: "MyFundLimitsService.GetEffective", call: (app: string) => watched.server.subject.f.myEffective(app) },
  ])("$what: the layers and the window's usage in one round trip", async ({ call }) => {
    const { admin, spend, subject } = watched.server;
    const app = await appWithLimit(admin, subject.userId, "100", "PERIOD_KIND_WEEKLY");
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("30"), capture: true });
    await authorized(spend, { userId: subject.userId, appId: app, amount: money("5") });
    // The caller's token and principal, and the kept fund policy, are fetched before.
    unwrap(await call(app));
    let usage: unknown;
    const trips = await watched.roundTrips(TOUCHING_LAYER, async () => {
      const answer = await call(app);
      usage = answer.data?.effective.usage;
      return answer;
    });
    expect(trips.length, trips.join("\n")).toBe(1);
    expect(trips[0]).toMatch(/spend_usage/);
    expect(usage).toMatchObject({ spent: money("30"), held: money("5"), limit: money("100"), remaining: money("65") });
  });
});
