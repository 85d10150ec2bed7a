// Every change of one row is one read-modify-write: changes started together are applied one after
// another and none is lost, and concurrent creations of a row make one row. Driven at the service,
// where nothing (HTTP parsing, token checks) spreads the calls out in time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/core/clock.js";
import { createLogger } from "../../src/core/logger.js";
import { PageTokens } from "../../src/core/pagination.js";
import { AppCaps } from "../../src/funds/app-caps.js";
import { FundPolicies } from "../../src/funds/fund-policy.js";
import { SubjectAppLimits } from "../../src/funds/subject-app-limits.js";
import { Users } from "../../src/identity/users.js";
import { ChangeWatch } from "../../src/storage/change-versions.js";
import { openStorage, type Storage } from "../../src/storage/connect.js";
import { usd } from "./helpers.js";

let dir: string;
let storage: Storage;
let limits: SubjectAppLimits;
let caps: AppCaps;
let policy: FundPolicies;
let userId: string;
const clock = new ManualClock(Date.parse("2026-11-20T09:00:00Z"));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tenant-api-atomic-"));
  storage = await openStorage({ kind: "sqlite", path: join(dir, "db.sqlite") });
  const tokens = new PageTokens(Buffer.alloc(32, 1));
  const users = new Users(storage, clock, tokens);
  policy = new FundPolicies(storage, clock, "t", new ChangeWatch(storage, "fund_policy", createLogger("silent")));
  await policy.ensure("USD");
  limits = new SubjectAppLimits(storage, clock, users, policy, tokens, "t");
  caps = new AppCaps(storage, clock, policy, tokens, "t");
  userId = (await users.create({ displayName: "U", email: "u@example.com", roles: ["ROLE_USER"] })).id;
});

afterAll(async () => {
  await storage?.close();
  rmSync(dir, { recursive: true, force: true });
});

const amount = (units: string) => ({ amount: { money: usd(units) } });
const expiresAt = new Date(clock.now() + 86_400_000).toISOString();

describe("one row, many changes at once", () => {
  it("changes of different fields started together are all applied (no lost update)", async () => {
    for (let i = 0; i < 10; i++) {
      const app = `app-${i}`;
      await Promise.all([
        limits.setLimit(userId, app, { limit: amount("1") }),
        limits.suspend(userId, app, { reason: "x" }),
        limits.setExtension(userId, app, { limit: amount("2"), expiresAt }),
      ]);
      expect((await limits.get(userId, app)).controls).toMatchObject({
        limit: amount("1"),
        extension: { limit: amount("2"), expiresAt },
        suspension: { reason: "x", suspendedAt: new Date(clock.now()).toISOString() },
      });
    }
  });

  it("concurrent creations of one row make one live row", async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => limits.setLimit(userId, "created-once", { limit: amount(String(i)) })));
    const page = await limits.search({ userIds: [userId], appIds: ["created-once"] }, 100, undefined);
    expect(page.items).toHaveLength(1);
  });

  it("a currency change waits for row writes and sees their amounts (CURRENCY_IN_USE)", async () => {
    const results = await Promise.allSettled([
      limits.setLimit(userId, "currency-race", { limit: amount("1") }),
      policy.update({ currencyCode: "EUR" }, "currencyCode"),
    ]);
    const [row, change] = results;
    // Either order is consistent: the row was written in USD and the change refused, or the change
    // came first and the USD amount was refused.
    if (row?.status === "fulfilled") {
      expect(change).toMatchObject({ status: "rejected", reason: { reason: "CURRENCY_IN_USE" } });
      expect((await policy.get()).currencyCode).toBe("USD");
    } else {
      expect(row).toMatchObject({ status: "rejected", reason: { reason: "CURRENCY_MISMATCH" } });
      expect((await policy.get()).currencyCode).toBe("EUR");
    }
  });

  it("app caps: concurrent creations of one cap make one live cap", async () => {
    await Promise.all(Array.from({ length: 6 }, (_, i) => caps.set("cap-race", { limit: { unlimited: {} }, period: i % 2 ? "PERIOD_KIND_DAILY" : undefined })));
    expect((await caps.list(100, undefined)).items.filter((c) => c.appId === "cap-race")).toHaveLength(1);
  });
});
