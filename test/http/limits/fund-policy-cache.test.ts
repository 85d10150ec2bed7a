// The fund policy is read once and kept while its change watch trusts it (src/funds/fund-policy.ts,
// src/storage/change-versions.ts): an update made through this instance shows in the very next Get
// and GetEffective; a change recorded by anyone else in the database shows within 1 s; a change not
// recorded is not seen at all, which shows that the kept policy costs no query; when the last poll
// is no longer fresh, the policy is read on every call.
import { describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { recordChange } from "../../../src/storage/change-versions.js";
import type { Storage } from "../../../src/storage/connect.js";
import { writeTransaction } from "../../../src/storage/transactions.js";
import { testDialect } from "../../support/database.js";
import type { TestServer } from "../../support/server.js";
import { observe, POLICY_CHANGES } from "./fund-policy-cache-helpers.js";
import { funds, newAppId } from "./helpers.js";
import { BOUND_MS, cacheTestServers, msUntilSeen } from "../identity/principal-cache-helpers.js";

const servers = cacheTestServers("fundPolicyPoll");

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
    const { userId, appId } = await subject(servers.local);
    for (const change of POLICY_CHANGES) {
      unwrap(await funds(servers.local.admin).policyUpdate(change.body));
      expect(change.seen(await observe(servers.local.admin, userId, appId)), change.name).toBe(true);
    }
  });

  it("a change written without its version is not seen (no query per request); once the version moves, it is within 1 s", async () => {
    await subject(servers.ts);
    await writeTimeZone(servers.storage, "Asia/Tokyo", { record: false });
    await new Promise((r) => setTimeout(r, 600));
    expect(await timeZoneOf(servers.ts)).toBe("UTC");
    const since = performance.now();
    await writeTransaction(servers.storage, { exclusive: [] }, (db) => recordChange(db, "fund_policy"));
    expect(await msUntilSeen(since, async () => (await timeZoneOf(servers.ts)) === "Asia/Tokyo" || "still UTC")).toBeLessThan(BOUND_MS);
  });

  it("when the last poll is no longer fresh, nothing kept is trusted: a change written without its version is seen by the next request", async () => {
    await subject(servers.stale);
    await writeTimeZone(servers.staleStorage, "Asia/Tokyo", { record: false });
    expect(await timeZoneOf(servers.stale)).toBe("Asia/Tokyo");
  });
});
