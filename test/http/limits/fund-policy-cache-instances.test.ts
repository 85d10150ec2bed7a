// The kept fund policy on several server processes sharing one database, as behind a load balancer:
// each kind of update made through one instance shows there at once and on every other within 1 s,
// in FundPolicyService.Get and in GetEffective, measured from before the update was sent. Each
// instance has first read and kept the policy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { observe, POLICY_CHANGES } from "./fund-policy-cache-helpers.js";
import { funds, newAppId } from "./helpers.js";
import { BOUND_MS, msUntilSeen } from "../identity/principal-cache-helpers.js";

const ADMIN = { clientId: "policy-admin", clientSecret: "policy-admin-secret-0123456789ab" };

let cluster: Instances | undefined;

beforeAll(async () => {
  // Rate limits off: the waits ask many times a second.
  cluster = await startInstances(2, ADMIN, "http://tenant.example.test", { RATE_LIMIT: "off", FUND_CURRENCY: "USD" });
}, 120_000);
afterAll(async () => cluster?.stop(), 120_000);

describe(`the kept fund policy on two instances on one ${testDialect()} database`, () => {
  it("each kind of update through instance 0: seen there at once, and on instance 1 within 1 s", async () => {
    const [first, second] = cluster!.clients as [NonNullable<Instances["clients"][0]>, NonNullable<Instances["clients"][0]>];
    const { user } = unwrap(await first.POST("/api/v1/users", { body: { displayName: "Policy", email: `policy-${Date.now()}@example.com`, roles: ["ROLE_USER"] } }));
    const appId = newAppId();
    for (const client of [first, second]) for (let i = 0; i < 3; i++) await observe(client, user.id!, appId);
    for (const change of POLICY_CHANGES) {
      const since = performance.now();
      unwrap(await funds(first).policyUpdate(change.body));
      expect(change.seen(await observe(first, user.id!, appId)), change.name).toBe(true);
      expect(await msUntilSeen(since, async () => change.seen(await observe(second, user.id!, appId))), change.name).toBeLessThan(BOUND_MS);
    }
  });
});
