// The fund policy: created at start with FUND_CURRENCY, the one currency of every amount, and the
// time zone UTC; Update by updateMask; a currency change while amounts are stored in another
// currency is 409 CURRENCY_IN_USE; a time zone the IANA database does not know is 400.
// This file owns its server (FUND_CURRENCY=EUR): the policy is tenant-wide.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, unwrap } from "../../../src/client/index.js";
import { loadConfig } from "../../../src/config.js";
import { ManualClock } from "../../../src/core/clock.js";
import { createLogger } from "../../../src/core/logger.js";
import { startServer } from "../../../src/server.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { amount, BLOCKED, DAY, expectError, funds, HOUR, newAppId, UNLIMITED, type Funds, shown, iso } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let userId: string;

beforeAll(async () => {
  ts = await startTestServer({ FUND_CURRENCY: "EUR" });
  admin = funds(ts.admin);
  userId = (await ts.userClient(["ROLE_USER"])).userId;
});
afterAll(async () => ts?.stop());

const policy = async () => unwrap(await admin.policyGet()).fundPolicy;
const update = (fundPolicy: unknown, updateMask?: string) => admin.policyUpdate({ fundPolicy, ...(updateMask === undefined ? {} : { updateMask }) });
const eur = (units: string) => amount(units, 0, "EUR");
const usd = (units: string) => amount(units, 0, "USD");

describe("FundPolicy", () => {
  it("is created at start with FUND_CURRENCY, no default controls, never updated", async () => {
    expect(await policy()).toEqual({ currencyCode: "EUR", timeZone: "UTC", defaultControls: null, updatedAt: null });
  });

  it("every amount must be in the policy's currency (CURRENCY_MISMATCH otherwise), and nothing is stored", async () => {
    const app = newAppId();
    expectError(await admin.setLimit(userId, app, { limit: usd("1") }), 400, "CURRENCY_MISMATCH");
    expectError(await admin.capSet(app, { controls: { limit: usd("1") } }), 400, "CURRENCY_MISMATCH");
    expectError(await update({ currencyCode: "EUR", defaultControls: { limit: usd("1") } }), 400, "CURRENCY_MISMATCH");
    expectError(await admin.get(userId, app), 404, "ROW_NOT_FOUND");
    expectError(await admin.capGet(app), 404, "APP_CAP_NOT_FOUND");
    expect((await policy()).defaultControls).toBeNull();
    expect(unwrap(await admin.setLimit(userId, app, { limit: eur("1") })).limit.controls).toEqual(shown({ limit: eur("1") }));
    unwrap(await admin.delete(userId, app));
  });

  it("the currency changes while no amount is stored; amounts then follow the new currency", async () => {
    // Rows without amounts do not hold a currency.
    const app = newAppId();
    unwrap(await admin.setLimit(userId, app, { limit: BLOCKED }));
    unwrap(await admin.suspend(userId, app, {}));
    unwrap(await admin.capSet(app, { controls: { limit: UNLIMITED } }));
    ts.clock.advance(HOUR);
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: null }, "currencyCode")).fundPolicy).toEqual({
      currencyCode: "USD",
      timeZone: "UTC",
      defaultControls: null,
      updatedAt: iso(ts.clock.now()),
    });
    expectError(await admin.setLimit(userId, newAppId(), { limit: eur("1") }), 400, "CURRENCY_MISMATCH");
    const other = newAppId();
    unwrap(await admin.setLimit(userId, other, { limit: usd("1") }));
    unwrap(await admin.delete(userId, other));
    expect(unwrap(await admin.get(userId, app)).limit.controls).toMatchObject({ limit: BLOCKED });
  });

  it("changing the currency while a subject-app row holds an amount is 409 CURRENCY_IN_USE, and nothing changes", async () => {
    const before = await policy();
    const app = newAppId();
    unwrap(await admin.setLimit(userId, app, { limit: usd("5") }));
    expectError(await update({ currencyCode: "GBP", defaultControls: null }, "currencyCode"), 409, "CURRENCY_IN_USE");
    expect(await policy()).toEqual(before);
    // An amount in an extension counts too.
    unwrap(await admin.setLimit(userId, app, { limit: BLOCKED }));
    unwrap(await admin.setExtension(userId, app, { limit: usd("6"), expiresAt: iso(ts.clock.now() + DAY) }));
    expectError(await update({ currencyCode: "GBP", defaultControls: null }, "currencyCode"), 409, "CURRENCY_IN_USE");
    // Removed rows do not count.
    unwrap(await admin.delete(userId, app));
  });

  it("an app cap holding an amount blocks a currency change", async () => {
    const app = newAppId();
    unwrap(await admin.capSet(app, { controls: { limit: usd("5") } }));
    expectError(await update({ currencyCode: "GBP", defaultControls: null }, "currencyCode"), 409, "CURRENCY_IN_USE");
    unwrap(await admin.capDelete(app));
  });

  it("the caller's own rows count like any other", async () => {
    const user = await ts.userClient(["ROLE_USER"]);
    const f = funds(user.client);
    const app = newAppId();
    unwrap(await f.mySetLimit(app, { limit: usd("5") }));
    expectError(await update({ currencyCode: "GBP", defaultControls: null }, "currencyCode"), 409, "CURRENCY_IN_USE");
    unwrap(await f.myClearLimit(app));
  });

  it("default controls kept by the update block a change; replaced in the same update, they must be in the new currency", async () => {
    unwrap(await update({ currencyCode: "USD", defaultControls: { limit: usd("100") } }, "defaultControls"));
    expectError(await update({ currencyCode: "GBP", defaultControls: null }, "currencyCode"), 409, "CURRENCY_IN_USE");
    expectError(await update({ currencyCode: "GBP", defaultControls: { limit: usd("100") } }), 400, "CURRENCY_MISMATCH");
    expect((await policy()).currencyCode).toBe("USD");
    const changed = unwrap(await update({ currencyCode: "GBP", defaultControls: { limit: amount("80", 0, "GBP") } })).fundPolicy;
    expect(changed).toMatchObject({ currencyCode: "GBP", defaultControls: { limit: amount("80", 0, "GBP") } });
    // Back to no default and USD, in one update.
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: null }, "currencyCode,defaultControls")).fundPolicy).toMatchObject({
      currencyCode: "USD",
      defaultControls: null,
    });
  });

  it("updateMask: fields not named are ignored; absent or empty names them all; unknown names are 400", async () => {
    const start = await policy();
    ts.clock.advance(HOUR);
    const onlyDefaults = unwrap(await update({ currencyCode: "JPY", defaultControls: { limit: usd("1") } }, "defaultControls")).fundPolicy;
    expect(onlyDefaults).toEqual({ currencyCode: start.currencyCode, timeZone: start.timeZone, defaultControls: shown({ limit: usd("1") }), updatedAt: iso(ts.clock.now()) });
    const onlyCurrency = unwrap(await update({ currencyCode: "USD", defaultControls: null }, "currencyCode")).fundPolicy;
    expect(onlyCurrency.defaultControls).toEqual(shown({ limit: usd("1") }));
    const all = unwrap(await update({ currencyCode: "USD", defaultControls: { limit: usd("2") } }, "")).fundPolicy;
    expect(all.defaultControls).toEqual(shown({ limit: usd("2") }));
    const absent = unwrap(await update({ currencyCode: "USD", defaultControls: null })).fundPolicy;
    expect(absent.defaultControls).toBeNull();
    for (const mask of ["currency", "defaultControls,period", "currencyCode, defaultControls", "updatedAt"]) {
      expectError(await update({ currencyCode: "USD", defaultControls: { limit: usd("3") } }, mask), 400);
    }
    expect(await policy()).toEqual(absent);
  });

  it("an unchanged update leaves updatedAt as it was", async () => {
    const before = await policy();
    ts.clock.advance(HOUR);
    expect(unwrap(await update({ currencyCode: before.currencyCode, defaultControls: before.defaultControls })).fundPolicy).toEqual(before);
  });

  it("bad currency codes are 400; a sent updatedAt is ignored", async () => {
    const before = await policy();
    for (const currencyCode of ["usd", "US", "USDX", "", 840]) {
      expectError(await update({ currencyCode, defaultControls: null }, "currencyCode"), 400);
    }
    ts.clock.advance(HOUR);
    expect(unwrap(await update({ ...before, updatedAt: iso(ts.clock.now()) })).fundPolicy).toEqual(before);
    expect(await policy()).toEqual(before);
  });
});

describe("FundPolicy.timeZone", () => {
  it("is set by an update naming it, answered by Get and Update, and fixes updatedAt only when it changes", async () => {
    const before = await policy();
    ts.clock.advance(HOUR);
    const paris = unwrap(await update({ currencyCode: "XXX", defaultControls: { limit: usd("9") }, timeZone: "Europe/Paris" }, "timeZone")).fundPolicy;
    expect(paris).toEqual({ ...before, timeZone: "Europe/Paris", updatedAt: iso(ts.clock.now()) });
    expect(await policy()).toEqual(paris);
    // The same zone again changes nothing.
    ts.clock.advance(HOUR);
    expect(unwrap(await update({ currencyCode: before.currencyCode, defaultControls: null, timeZone: "Europe/Paris" }, "timeZone")).fundPolicy).toEqual(paris);
    // Named with other fields, it changes with them.
    const both = unwrap(await update({ currencyCode: before.currencyCode, defaultControls: null, timeZone: "America/New_York" }, "defaultControls,timeZone")).fundPolicy;
    expect(both).toMatchObject({ timeZone: "America/New_York", defaultControls: null, updatedAt: iso(ts.clock.now()) });
  });

  it("is kept by an update that does not name it, and by one without a mask that does not send it", async () => {
    unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone: "Asia/Tokyo" }, "timeZone"));
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone: "Europe/London" }, "currencyCode,defaultControls")).fundPolicy.timeZone).toBe("Asia/Tokyo");
    // A client written before the field existed replaces "every field" and does not know this one.
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: { limit: usd("4") } })).fundPolicy).toMatchObject({ timeZone: "Asia/Tokyo", defaultControls: shown({ limit: usd("4") }) });
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: null }, "")).fundPolicy.timeZone).toBe("Asia/Tokyo");
    // Sent without a mask, it is replaced like every other field.
    expect(unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone: "UTC" })).fundPolicy.timeZone).toBe("UTC");
    expect((await policy()).timeZone).toBe("UTC");
  });

  it("a name the IANA database does not know, or none while the mask names it, is 400 INVALID_TIME_ZONE, and nothing changes", async () => {
    const before = await policy();
    for (const timeZone of ["Mars/Olympus_Mons", "Europe/Pariss", "", "+01:00", "UTC+1", "Europe/Paris ", 60, null, undefined]) {
      const answer = await update({ currencyCode: "GBP", defaultControls: null, timeZone }, "currencyCode,timeZone");
      if (typeof timeZone === "string" || timeZone === undefined) {
        expectError(answer, 400, "INVALID_TIME_ZONE");
        expect((answer.error as { message: string }).message).toBe("body.fundPolicy.timeZone: must be an IANA time zone name such as Europe/Paris");
      } else {
        // Not a string at all: the contract's schema refuses it first.
        expectError(answer, 400, "INVALID_ARGUMENT");
      }
    }
    // Sent without a mask, it is checked all the same.
    expectError(await update({ currencyCode: "USD", defaultControls: null, timeZone: "Nowhere/Land" }), 400, "INVALID_TIME_ZONE");
    // Longer than any IANA name (64 characters at most): the schema refuses it.
    expectError(await update({ currencyCode: "USD", defaultControls: null, timeZone: `Europe/${"x".repeat(58)}` }, "timeZone"), 400, "INVALID_ARGUMENT");
    expect(await policy()).toEqual(before);
  });

  it("accepts any zone the IANA database names, links and fixed offsets of Etc included, and answers its canonical name", async () => {
    const canonical = {
      "Australia/Lord_Howe": "Australia/Lord_Howe",
      "America/Argentina/ComodRivadavia": "America/Argentina/Catamarca",
      "Asia/Kolkata": "Asia/Kolkata",
      "US/Eastern": "America/New_York",
      "Etc/GMT-14": "Etc/GMT-14",
      "Pacific/Chatham": "Pacific/Chatham",
      "UTC": "UTC",
    };
    for (const [timeZone, name] of Object.entries(canonical)) {
      expect(unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone }, "timeZone")).fundPolicy.timeZone).toBe(name);
      expect((await policy()).timeZone).toBe(name);
    }
  });

  it("is answered to every role that may read the policy, an app's backend included", async () => {
    unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone: "Europe/Paris" }, "timeZone"));
    for (const roles of [["ROLE_USER"], ["ROLE_FUND_ADMIN"], ["ROLE_APP_SERVICE"]] as const) {
      const caller = funds((await ts.userClient([...roles])).client);
      expect(unwrap(await caller.policyGet()).fundPolicy.timeZone).toBe("Europe/Paris");
    }
    unwrap(await update({ currencyCode: "USD", defaultControls: null, timeZone: "UTC" }, "timeZone"));
  });
});

describe("the policy across restarts", () => {
  it("is created only when absent: a restart with another FUND_CURRENCY keeps the stored policy", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tenant-api-policy-"));
    const start = (currency: string) =>
      startServer({
        config: loadConfig({
          PORT: "0",
          HOST: "127.0.0.1",
          DATABASE_URL: `sqlite:${join(dir, "db.sqlite")}`,
          BOOTSTRAP_CLIENT_ID: BOOTSTRAP.clientId,
          BOOTSTRAP_CLIENT_SECRET: BOOTSTRAP.clientSecret,
          FUND_CURRENCY: currency,
          LOG_LEVEL: "silent",
        }),
        clock: new ManualClock(Date.parse("2026-11-20T09:00:00Z")),
        logger: createLogger("silent"),
      });
    try {
      const first = await start("CHF");
      const f1 = funds(createApiClient({ baseUrl: first.url, credentials: BOOTSTRAP }));
      expect(unwrap(await f1.policyGet()).fundPolicy.currencyCode).toBe("CHF");
      await first.close();
      const second = await start("USD");
      const f2 = funds(createApiClient({ baseUrl: second.url, credentials: BOOTSTRAP }));
      expect(unwrap(await f2.policyGet()).fundPolicy).toEqual({ currencyCode: "CHF", timeZone: "UTC", defaultControls: null, updatedAt: null });
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
