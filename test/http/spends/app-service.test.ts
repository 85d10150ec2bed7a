// An app service (ROLE_APP_SERVICE) spends for the apps its credential is bound to, for any
// subject, and sees only those apps' authorizations; and the fund policy's time zone fixes the
// windows of every spend.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import type { TestServer } from "../../support/server.js";
import { expectError, type Funds } from "../limits/helpers.js";
import { appWithLimit, authorized, money, spends, startSpendServer, type Authorization, type Spends } from "./helpers.js";

let ts: TestServer;
let admin: Funds;
let spend: Spends;
let subject: { userId: string; f: Funds; s: Spends };
let service: Spends;
let mine: string;
let theirs: string;

beforeAll(async () => {
  ({ ts, admin, spend, subject } = await startSpendServer());
  mine = await appWithLimit(admin, subject.userId, "100");
  const second = await appWithLimit(admin, subject.userId, "100");
  theirs = await appWithLimit(admin, subject.userId, "100");
  service = spends((await ts.userClient(["ROLE_APP_SERVICE"], "Backend", { appIds: [mine, second] })).client);
});
afterAll(async () => ts?.stop());

const usd = (units: string) => money(units);
const messageOf = (r: { error?: unknown }) => (r.error as { message: string }).message;
const metadataOf = (r: { error?: unknown }) => (r.error as { details: { metadata?: object }[] }).details[0]!.metadata;
const ids = (list: { authorization: Authorization }[]) => list.map((v) => v.authorization.id);

describe("an app service acts for its bound apps only", () => {
  it("authorizes, captures, releases and reverses for a bound app, for any subject", async () => {
    const a = await authorized(service, { userId: subject.userId, appId: mine, amount: usd("10") });
    expect(a.state).toBe("SPEND_AUTHORIZATION_STATE_PENDING");
    expect(unwrap(await service.capture(a.id, { amount: usd("6") })).authorization.capturedAmount).toEqual(usd("6"));
    expect(unwrap(await service.reverse(a.id)).authorization.reversedAmount).toEqual(usd("6"));
    const b = await authorized(service, { userId: subject.userId, appId: mine, amount: usd("1") });
    expect(unwrap(await service.release(b.id)).authorization.state).toBe("SPEND_AUTHORIZATION_STATE_RELEASED");
    expect(unwrap(await service.get(a.id)).authorization.id).toBe(a.id);
  });

  it("Authorize for another app is 403 APP_NOT_ALLOWED, and nothing is stored", async () => {
    const r = await service.authorize({ userId: subject.userId, appId: theirs, amount: usd("1") });
    expectError(r, 403, "APP_NOT_ALLOWED");
    expect(messageOf(r)).toBe("the credential is not bound to this app");
    expect(metadataOf(r)).toEqual({ appId: theirs });
    expect(unwrap(await spend.list({ app_id: theirs })).list).toEqual([]);
  });

  it("another app's authorization is 404 to Get, Capture, Release and Reverse, as if it did not exist, and is unchanged", async () => {
    const other = await authorized(spend, { userId: subject.userId, appId: theirs, amount: usd("2") });
    const captured = await authorized(spend, { userId: subject.userId, appId: theirs, amount: usd("2"), capture: true });
    for (const r of [await service.get(other.id), await service.capture(other.id), await service.release(other.id), await service.reverse(captured.id)]) {
      expectError(r, 404, "AUTHORIZATION_NOT_FOUND");
    }
    expect(unwrap(await spend.get(other.id)).authorization).toEqual(other);
    expect(unwrap(await spend.get(captured.id)).authorization).toEqual(captured);
  });

  it("List: without app_id its bound apps' authorizations; a bound app_id filters; another app is 403 APP_NOT_ALLOWED", async () => {
    const a = await authorized(service, { userId: subject.userId, appId: mine, amount: usd("1") });
    const b = await authorized(spend, { userId: subject.userId, appId: theirs, amount: usd("1") });
    const listed = ids(unwrap(await service.list({ page_size: 100 })).list);
    expect(listed).toContain(a.id);
    expect(listed).not.toContain(b.id);
    expect(ids(unwrap(await service.list({ app_id: mine, page_size: 100 })).list)).toContain(a.id);
    const r = await service.list({ app_id: theirs });
    expectError(r, 403, "APP_NOT_ALLOWED");
    expect(messageOf(r)).toBe("the credential is not bound to this app");
  });
});

describe("the fund policy's time zone fixes the window", () => {
  it("a daily window is the local day in the policy's zone, and GetEffective's usage names the same", async () => {
    unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: null, timeZone: "America/New_York" }, updateMask: "timeZone" }));
    try {
      const app = await appWithLimit(admin, subject.userId, "10", "PERIOD_KIND_DAILY");
      // 09:00Z on 20 Nov 2026 is 04:00 in New York (EST, UTC-5): the local day began at 05:00Z.
      const a = await authorized(spend, { userId: subject.userId, appId: app, amount: usd("4"), capture: true });
      expect(a).toMatchObject({ windowStart: "2026-11-20T05:00:00.000Z", windowEnd: "2026-11-21T05:00:00.000Z" });
      expect(unwrap(await admin.effective(subject.userId, app)).effective.usage).toMatchObject({ windowStart: "2026-11-20T05:00:00.000Z", spent: usd("4") });
      // 04:59:59.999Z on the 21st is still the 20th in New York; 05:00Z begins the 21st.
      ts.clock.set(Date.parse("2026-11-21T04:59:59.999Z"));
      expect((await authorized(spend, { userId: subject.userId, appId: app, amount: usd("7") })).decision).toMatchObject({ approved: false, usage: { spent: usd("4") } });
      ts.clock.set(Date.parse("2026-11-21T05:00:00.000Z"));
      expect(await authorized(spend, { userId: subject.userId, appId: app, amount: usd("7") })).toMatchObject({ windowStart: "2026-11-21T05:00:00.000Z", decision: { approved: true } });
    } finally {
      ts.clock.set(Date.parse("2026-11-20T09:00:00Z"));
      unwrap(await admin.policyUpdate({ fundPolicy: { currencyCode: "USD", defaultControls: null, timeZone: "UTC" }, updateMask: "timeZone" }));
    }
  });
});
