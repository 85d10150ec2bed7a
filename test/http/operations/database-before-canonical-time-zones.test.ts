// A database whose fund policy an earlier release stored with the time-zone name as it was sent
// (`europe/paris`): the server answers it by its canonical name and keeps the zone's windows; the
// same zone sent again in its canonical spelling changes nothing.
import { describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { ManualClock } from "../../../src/core/clock.js";
import { testDialect } from "../../support/database.js";
import { OLD_ADMIN, serverOnOldDatabase, writeOldAdmin } from "../../support/old-database.js";
import { amount, funds } from "../limits/helpers.js";

const SUBJECT = "0ldSubject000003";
const clock = new ManualClock(Date.parse("2026-11-20T09:00:00Z"));

const old = serverOnOldDatabase("0018_spend_windows_by_start_and_end", clock, async (db) => {
  const at = "2026-11-01T08:00:00.000Z";
  await writeOldAdmin(db, at);
  await db.insertInto("users").values({ id: SUBJECT, display_name: "Old subject", email: "zone@example.com", email_key: "zone@example.com", roles: '["ROLE_USER"]', created_at: at, updated_at: at }).execute();
  await db.insertInto("fund_policy").values({ tenant_id: "default", currency_code: "USD", time_zone: "europe/paris", default_controls: null, updated_at: at }).execute();
});

describe(`a fund policy stored with a time-zone name as sent (${testDialect()})`, () => {
  it("is answered by the zone's canonical name, and its windows are that zone's", async () => {
    const admin = funds(createApiClient({ baseUrl: old.server().url, credentials: { clientId: OLD_ADMIN.clientId, clientSecret: OLD_ADMIN.clientSecret } }));
    const policy = unwrap(await admin.policyGet()).fundPolicy;
    expect(policy).toEqual({ currencyCode: "USD", timeZone: "Europe/Paris", defaultControls: null, updatedAt: "2026-11-01T08:00:00.000Z" });
    unwrap(await admin.setLimit(SUBJECT, "app-zone", { limit: amount("10"), period: "PERIOD_KIND_MONTHLY" }));
    expect(unwrap(await admin.effective(SUBJECT, "app-zone")).effective.usage).toMatchObject({ windowStart: "2026-10-31T23:00:00.000Z", windowEnd: "2026-11-30T23:00:00.000Z" });
    // Sent back as read: the same zone, no change.
    expect(unwrap(await admin.policyUpdate({ fundPolicy: policy })).fundPolicy).toEqual(policy);
  });
});
