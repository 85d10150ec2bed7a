// The spend command (scripts/spend.ts) as a partner runs it, against a real server: authorizes, simulates,
// captures, reverses, releases, gets and lists with client credentials from flags or the
// environment, prints the JSON answer (the Idempotency-Key on stderr), and exits 0 done or
// approved, 1 declined, 2 usage error, 3 refused by the API or not reached.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type components } from "../../../src/client/index.js";
import { runSpend } from "../../support/process.js";
import { startTestServer, type TestServer } from "../../support/server.js";

type Authorization = components["schemas"]["SpendAuthorization"];

let ts: TestServer;
let admin: { clientId: string; clientSecret: string };
let subject: string;
const APP = "app-salesforce";

beforeAll(async () => {
  ts = await startTestServer();
  ts.clock.set(Date.now());
  admin = await ts.userClient(["ROLE_FUND_ADMIN"], "Script fund admin");
  subject = (await ts.userClient(["ROLE_USER"], "Script subject")).userId;
  unwrap(
    await ts.admin.POST("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/limit", {
      params: { path: { user_id: subject, app_id: APP } },
      body: { limit: { amount: { money: { currencyCode: "USD", units: "100", nanos: 0 } } }, period: "PERIOD_KIND_MONTHLY" },
    }),
  );
}, 120_000);
afterAll(async () => ts?.stop());

/** Runs the command with the credentials in the environment, as docs/spends.md's session does. */
const spend = (...args: string[]) => runSpend(["--base-url", ts.url, ...args], { CLIENT_ID: admin.clientId, CLIENT_SECRET: admin.clientSecret });
const authorizationOf = (stdout: string) => (JSON.parse(stdout) as { authorization: Authorization }).authorization;
const usd = (units: string, nanos = 0) => ({ currencyCode: "USD", units, nanos });

describe("scripts/spend.ts", () => {
  it("authorizes (exit 0), captures a part, reverses a part, and the usage follows", async () => {
    const held = await spend("authorize", "--user", subject, "--app", APP, "--amount", "40", "--metadata", "orderId=ord_1", "--metadata", "note=a=b");
    expect(held.code, held.out).toBe(0);
    expect(held.stderr).toMatch(/^Idempotency-Key: [0-9a-f-]{36}\n$/);
    const pending = authorizationOf(held.stdout);
    expect(pending).toMatchObject({ userId: subject, appId: APP, amount: usd("40"), state: "SPEND_AUTHORIZATION_STATE_PENDING", metadata: { orderId: "ord_1", note: "a=b" } });
    expect(pending.decision.usage.held).toEqual(usd("40"));

    const captured = await spend("capture", pending.id, "--amount", "25.5");
    expect(captured.code, captured.out).toBe(0);
    expect(authorizationOf(captured.stdout)).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", capturedAmount: usd("25", 500_000_000) });

    const reversed = await spend("reverse", pending.id, "--amount", "5.25");
    expect(reversed.code, reversed.out).toBe(0);
    expect(authorizationOf(reversed.stdout)).toMatchObject({ state: "SPEND_AUTHORIZATION_STATE_CAPTURED", reversedAmount: usd("5", 250_000_000) });

    const got = await spend("get", pending.id);
    expect(got.code).toBe(0);
    expect(got.stderr).toBe(""); // a read sends no key
    expect(authorizationOf(got.stdout)).toMatchObject({ id: pending.id, capturedAmount: usd("25", 500_000_000), reversedAmount: usd("5", 250_000_000) });

    const { effective } = unwrap(await ts.admin.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}/effective", { params: { path: { user_id: subject, app_id: APP } } }));
    expect(effective.usage).toMatchObject({ spent: usd("20", 250_000_000), held: usd("0"), remaining: usd("79", 750_000_000) });
  }, 120_000);

  it("a decline is exit 1 with the authorization on stdout; a refusal is exit 3 with the Status", async () => {
    const declined = await spend("authorize", "--user", subject, "--app", APP, "--amount", "500");
    expect(declined.code, declined.out).toBe(1);
    const authorization = authorizationOf(declined.stdout);
    expect(authorization.state).toBe("SPEND_AUTHORIZATION_STATE_DECLINED");
    expect(authorization.decision.cause).toBe("SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED");

    const refused = await spend("capture", authorization.id);
    expect(refused.code, refused.out).toBe(3);
    expect(JSON.parse(refused.stdout)).toMatchObject({ code: 9, details: expect.arrayContaining([expect.objectContaining({ reason: "AUTHORIZATION_NOT_PENDING", metadata: { state: "SPEND_AUTHORIZATION_STATE_DECLINED" } })]) });
    expect(refused.stderr).toContain("spend: the API answered 409 AUTHORIZATION_NOT_PENDING");

    // Simulate: the decision authorize would make, nothing held, no key; a decline is exit 1 too.
    const wouldDecline = await spend("simulate", "--user", subject, "--app", APP, "--amount", "500");
    expect(wouldDecline.code, wouldDecline.out).toBe(1);
    expect(wouldDecline.stderr).toBe("");
    expect(JSON.parse(wouldDecline.stdout)).toMatchObject({ decision: { approved: false, cause: "SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED" }, usage: { remaining: expect.any(Object) } });
    const wouldApprove = await spend("simulate", "--user", subject, "--app", APP, "--amount", "1", "--capture");
    expect(wouldApprove.code, wouldApprove.out).toBe(0);
    expect((JSON.parse(wouldApprove.stdout) as { decision: { approved: boolean } }).decision.approved).toBe(true);

    const unknown = await spend("get", "Sa0000000000000x");
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("404 AUTHORIZATION_NOT_FOUND");
  }, 120_000);

  it("releases a hold, and a retry with the printed key answers the same authorization without a second hold", async () => {
    const key = `script-${Date.now()}`;
    const first = await spend("authorize", "--user", subject, "--app", APP, "--amount", "10", "--hold-seconds", "60", "--idempotency-key", key);
    const again = await spend("authorize", "--user", subject, "--app", APP, "--amount", "10", "--hold-seconds", "60", "--idempotency-key", key);
    expect([first.code, again.code]).toEqual([0, 0]);
    expect(first.stderr).toBe(`Idempotency-Key: ${key}\n`);
    expect(authorizationOf(again.stdout)).toEqual(authorizationOf(first.stdout));
    const { id } = authorizationOf(first.stdout);
    const holds = unwrap(await ts.admin.GET("/api/v1/funds/spend-authorizations", { params: { query: { user_id: subject, app_id: APP, state: "SPEND_AUTHORIZATION_STATE_PENDING" } } }));
    expect(holds.list.map((a) => a.authorization.id)).toEqual([id]);

    const released = await spend("release", id);
    expect(released.code, released.out).toBe(0);
    expect(authorizationOf(released.stdout).state).toBe("SPEND_AUTHORIZATION_STATE_RELEASED");

    const listed = await spend("list", "--user", subject, "--app", APP, "--state", "released");
    expect(listed.code, listed.out).toBe(0);
    expect((JSON.parse(listed.stdout) as { list: { authorization: Authorization }[] }).list.map((a) => a.authorization.id)).toEqual([id]);
  }, 120_000);

  it("takes the credentials as flags too; refused credentials are one line, exit 3", async () => {
    const flags = await runSpend(["--base-url", ts.url, "--client-id", admin.clientId, `--client-secret=${admin.clientSecret}`, "list", "--user", subject]);
    expect(flags.code, flags.out).toBe(0);
    const wrong = await runSpend(["--base-url", ts.url, "--client-id", admin.clientId, "--client-secret=-wrong", "get", "Sa0000000000000x"]);
    expect(wrong.code).toBe(3);
    expect(wrong.out.trim().split("\n")).toEqual([expect.stringMatching(/^spend: sign-in refused \(401/)]);
    const unreachable = await runSpend(["--base-url", "http://127.0.0.1:1", "--client-id", "x", "--client-secret=y", "get", "Sa0000000000000x"]);
    expect(unreachable.code).toBe(3);
    expect(unreachable.out).toMatch(/^spend: could not reach http:\/\/127\.0\.0\.1:1/);
  }, 120_000);

  it("usage errors are one line, no stack trace, exit 2; --help names every command and option (exit 0)", async () => {
    const cases = [
      [],
      ["refund", "x"],
      ["capture"],
      ["get", "a", "b"],
      ["authorize", "--user", subject, "--app", APP, "--amount", "-3"],
      ["authorize", "--user", subject, "--app", APP, "--amount=-3"],
      ["authorize", "--user", subject, "--app", APP, "--amount", "1.0000000001"],
      ["authorize", "--user", subject, "--app", APP, "--amount", "1.5", "--metadata", "novalue"],
      ["authorize", "--user", subject],
      ["get", "x", "--bogus"],
    ];
    for (const args of cases) {
      const r = await spend(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.out.trim().split("\n"), args.join(" ")).toHaveLength(1);
      expect(r.out).toMatch(/^spend: /);
      expect(r.out).not.toMatch(/\bat \S+ \(|node:internal/);
    }
    const missing = await runSpend(["--base-url", ts.url, "get", "x"]);
    expect(missing.code).toBe(2);
    expect(missing.out).toContain("CLIENT_ID");

    const help = await runSpend(["--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^Usage: npx tsx scripts\/spend.ts/);
    for (const word of ["authorize", "simulate", "capture", "release", "reverse", "get", "list", "--base-url", "--client-id", "--client-secret=", "--idempotency-key", "--currency", "--amount", "--hold-seconds", "--capture", "--metadata", "--state", "BASE_URL", "CLIENT_SECRET"]) {
      expect(help.out).toContain(word);
    }
  }, 120_000);
});
