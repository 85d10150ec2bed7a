// The fund policy is read once and kept while its change watch trusts it (src/funds/fund-policy.ts,
// src/storage/change-versions.ts): an update made through this instance shows in the very next Get
// and GetEffective; a change recorded by anyone else in the database shows within 1 s; a change not
// recorded is not seen at all, which shows that the kept policy costs no query; when the last poll
// is no longer fresh, the policy is read on every call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../src/client/index.js";
import { recordChange } from "../../src/storage/change-versions.js";
import type { Storage } from "../../src/storage/connect.js";
import { writeTransaction } from "../../src/storage/transactions.js";
import { testDialect } from "../support/database.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { observe, POLICY_CHANGES } from "./fund-policy-cache-helpers.js";
import { funds, newAppId } from "./funds-helpers.js";
import { BOUND_MS, msUntilSeen, openDatabase } from "./principal-cache-helpers.js";

let ts: TestServer;
/** Polls once a minute: what changes there at once is this instance's own invalidation, not a poll. */
let local: TestServer;
/** Its one poll is trusted for 1 ms: as an instance whose polls fail or lag, it must read every time. */
let stale: TestServer;
let storage: Storage;
let staleStorage: Storage;

beforeAll(async () => {
  [ts, local, stale] = await Promise.all([
    startTestServer({ RATE_LIMIT: "off" }),
    startTestServer({ RATE_LIMIT: "off" }, undefined, { fundPolicyPoll: { pollMs: 60_000, trustMs: 120_000 } }),
    startTestServer({ RATE_LIMIT: "off" }, undefined, { fundPolicyPoll: { pollMs: 60_000, trustMs: 1 } }),
  ]);
  storage = await openDatabase(ts.databaseUrl);
  staleStorage = await openDatabase(stale.databaseUrl);
});
afterAll(async () => {
  await Promise.all([storage?.close(), staleStorage?.close()]);
  await Promise.all([ts?.stop(), local?.stop(), stale?.stop()]);
});

/** A user and an app whose effective limit is the tenant default; the policy read (and kept) first. */
async function subject(server: TestServer) {
  const { userId } = await server.userClient(["ROLE_USER"]);
  const appId = newAppId();
  for (let i = 0; i < 3; i++) await observe(server.admin, userId, appId);
  return { userId, appId };
}

/** Writes the time zone as no operation does: straight to the row, with the version or without. */
async function writeTimeZone(db: Storage, timeZone: string, options: { record: boolean }): Promise<void> {
  await writeTransaction(db, { exclusive: [] }, async (trx) => {
    await trx.updateTable("fund_policy").set({ time_zone: timeZone }).execute();
    if (options.record) await recordChange(trx, "fund_policy");
  });
}

const timeZoneOf = async (server: TestServer) => unwrap(await funds(server.admin).policyGet()).fundPolicy.timeZone;

describe(`the kept fund policy on one instance (${testDialect()})`, () => {
  it("each kind of update through this instance shows in its very next Get and GetEffective", async () => {
    const { userId, appId } = await subject(local);
    for (const change of POLICY_CHANGES) {
      unwrap(await funds(local.admin).policyUpdate(change.body));
      expect(change.seen(await observe(local.admin, userId, appId)), change.name).toBe(true);
    }
  });

  it("a change written without its version is not seen (no query per request); once the version moves, it is within 1 s", async () => {
    await subject(ts);
    await writeTimeZone(storage, "Asia/Tokyo", { record: false });
    await new Promise((r) => setTimeout(r, 600));
    expect(await timeZoneOf(ts)).toBe("UTC");
    const since = performance.now();
    await writeTransaction(storage, { exclusive: [] }, (db) => recordChange(db, "fund_policy"));
    expect(await msUntilSeen(since, async () => (await timeZoneOf(ts)) === "Asia/Tokyo" || "still UTC")).toBeLessThan(BOUND_MS);
  });

  it("when the last poll is no longer fresh, nothing kept is trusted: a change written without its version is seen by the next request", async () => {
    await subject(stale);
    await writeTimeZone(staleStorage, "Asia/Tokyo", { record: false });
    expect(await timeZoneOf(stale)).toBe("Asia/Tokyo");
  });
});
