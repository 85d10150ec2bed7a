// `npm run sandbox` as a partner runs it: a real process on a free port, whose printed JSON (--json)
// is all the test knows. Each printed credential gets a token and acts with its role; the printed
// HMAC secret and JWT key sign events the real intake accepts (and a repeated event id is 409), and
// so do the printed curl recipes of the Standard Webhooks, GitHub and Stripe listeners;
// the seeded limits, spend authorizations and executions are there; the printed commands work in
// the order printed; a restart starts again from nothing; SIGTERM to the npm process alone (as a
// process manager sends it) stops the sandbox, its server and its JWKS server.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiClient, unwrap, type ApiClient } from "../src/client/index.js";
import { sendWebhookEvent } from "../src/client/webhook-sender.js";
import { recipes, report } from "../scripts/sandbox/report.js";
import { accepting, freePort, runToEnd } from "./support/process.js";
import { startSandbox, type RunningSandbox } from "./support/sandbox.js";

const root = fileURLToPath(new URL("..", import.meta.url));

let dir: string;
let port: number;
let sandbox: RunningSandbox;
const clients = new Map<string, ApiClient>();

const clientOf = (role: string): ApiClient => {
  const user = sandbox.info.users.find((u) => u.role === role);
  expect(user, role).toBeDefined();
  return createApiClient({ baseUrl: sandbox.info.baseUrl, credentials: { clientId: user!.clientId, clientSecret: user!.clientSecret } });
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sandbox-test-"));
  port = await freePort();
  sandbox = await startSandbox(port, dir);
  for (const role of ["ROLE_SUPER_ADMIN", "ROLE_FUND_ADMIN", "ROLE_USER"]) clients.set(role, clientOf(role));
}, 120_000);
afterAll(async () => {
  await sandbox?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("npm run sandbox", () => {
  it("prints the same JSON it writes to sandbox.json, with the fixed super-admin credential", () => {
    expect(JSON.parse(readFileSync(join(dir, "sandbox.json"), "utf8"))).toEqual(sandbox.info);
    expect(sandbox.info.baseUrl).toBe(`http://127.0.0.1:${port}`);
    expect(sandbox.info.users.find((u) => u.role === "ROLE_SUPER_ADMIN")).toMatchObject({ clientId: "sandbox-admin" });
  });

  it("its text (without --json) shows every credential, the listeners, the secret and the key file", () => {
    const text = report(sandbox.info);
    const { hmac, standardWebhooks, github, stripe, jwt, jwtKey, users, baseUrl } = sandbox.info;
    const spends = sandbox.info.authorizations.map((a) => a.id);
    const senders = [standardWebhooks, github, stripe].flatMap((l) => [l.listenerUrl, l.webhookSecret]);
    for (const shown of [baseUrl, hmac.listenerUrl, hmac.webhookSecret, ...senders, jwt.listenerUrl, jwt.jwksUrl, jwtKey.privateJwkFile, ...users.flatMap((u) => [u.clientId, u.clientSecret]), ...spends]) {
      expect(text).toContain(shown);
    }
  });

  it("every printed credential gets a token and acts with its role", async () => {
    const probes = {
      users: (c: ApiClient) => c.GET("/api/v1/users", {}),
      search: (c: ApiClient) => c.POST("/api/v1/funds/subject-app-limits/search", { body: { pageSize: 10 } }),
      mine: (c: ApiClient) => c.GET("/api/v1/funds/my/app-limits", {}),
    };
    const expected = {
      ROLE_SUPER_ADMIN: { users: 200, search: 200, mine: 200 },
      ROLE_FUND_ADMIN: { users: 200, search: 200, mine: 200 },
      ROLE_USER: { users: 403, search: 403, mine: 200 },
      ROLE_APP_SERVICE: { users: 403, search: 403, mine: 403 },
    };
    for (const user of sandbox.info.users) {
      const c = createApiClient({ baseUrl: sandbox.info.baseUrl, credentials: { clientId: user.clientId, clientSecret: user.clientSecret } });
      const seen = Object.fromEntries(await Promise.all(Object.entries(probes).map(async ([name, call]) => [name, (await call(c)).response.status])));
      expect(seen, `${user.displayName} (${user.role})`).toEqual(expected[user.role]);
    }
    // The app service's credential is bound to the apps printed with it; every other to none.
    const admin = clients.get("ROLE_SUPER_ADMIN")!;
    for (const user of sandbox.info.users) {
      const listed = unwrap(await admin.GET("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.userId } } })).list.map((c) => c.credential);
      expect(listed.find((c) => c.clientId === user.clientId)?.appIds, user.displayName).toEqual(user.appIds);
      expect(user.appIds.length > 0, user.displayName).toBe(user.role === "ROLE_APP_SERVICE");
    }
  });

  it("the printed HMAC secret signs an event the intake accepts once, and a repeat of its id is 409", async () => {
    const { listenerUrl, webhookSecret } = sandbox.info.hmac;
    const event = { url: listenerUrl, body: '{"event":"card.found"}', auth: { hmac: { secret: webhookSecret } }, eventId: crypto.randomUUID() };
    expect((await sendWebhookEvent(event)).status).toBe(200);
    expect((await sendWebhookEvent(event)).status).toBe(409);
  });

  it("the JWT listener accepts an event signed with the printed private key", async () => {
    const { privateJwkFile, kid, alg } = sandbox.info.jwtKey;
    const privateKey = JSON.parse(readFileSync(privateJwkFile, "utf8")) as JWK;
    const sent = await sendWebhookEvent({
      url: sandbox.info.jwt.listenerUrl,
      body: '{"event":"card.found"}',
      auth: { jwt: { privateKey, kid, alg: alg as "ES256", baseUrl: sandbox.info.baseUrl } },
    });
    expect(sent.status, JSON.stringify(sent.response)).toBe(200);
  });

  it("the seeded limits are there on every layer", async () => {
    const funds = clients.get("ROLE_FUND_ADMIN")!;
    const policy = unwrap(await funds.GET("/api/v1/funds/policy", {})).fundPolicy;
    expect(policy.defaultControls).toMatchObject({ limit: { amount: { money: { units: "100" } } } });
    expect(policy.timeZone).toBe(sandbox.info.timeZone);
    expect(report(sandbox.info)).toContain(`time zone: ${policy.timeZone}`);
    const caps = unwrap(await funds.GET("/api/v1/funds/app-caps", {})).list.map((c) => c.appCap.appId);
    expect(caps.sort()).toEqual([...sandbox.info.appCaps].sort());
    const rows = unwrap(await funds.POST("/api/v1/funds/subject-app-limits/search", { body: { pageSize: 100 } })).list.map((r) => r.limit);
    const row = (userId: string, appId: string) => rows.find((r) => r.userId === userId && r.appId === appId);
    for (const seeded of sandbox.info.limits) expect(row(seeded.userId, seeded.appId), seeded.shows).toBeDefined();
    const [, ada, sam] = sandbox.info.users.slice(1);
    expect(row(sam!.userId, "app-salesforce")?.controls?.suspension?.reason).toBe("Card reported lost");
    expect(row(sam!.userId, "app-github")?.controls?.extension).toMatchObject({ limit: { amount: { money: { units: "500" } } } });
    // Suspended by the seeded card.lost event's execution, through the real intake and worker.
    expect(row(ada!.userId, "app-github")?.controls?.suspension).toBeTruthy();
  });

  it("the users list runs past its smallest page: a next page token, which gives the rest, colleagues included", async () => {
    const admin = clients.get("ROLE_SUPER_ADMIN")!;
    // page_size below 10 reads as 10: the smallest page there is.
    const first = unwrap(await admin.GET("/api/v1/users", { params: { query: { page_size: 1 } } }));
    expect(first.list).toHaveLength(10);
    expect(first.nextPageToken).not.toBe("");
    const second = unwrap(await admin.GET("/api/v1/users", { params: { query: { page_size: 1, page_token: first.nextPageToken } } }));
    const ids = [...first.list, ...second.list].map((u) => u.user.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([...sandbox.info.users.map((u) => u.userId), ...sandbox.info.teamUserIds]));
    expect(report(sandbox.info)).toContain(`${sandbox.info.teamUserIds.length} colleagues with no credential`);
  });

  it("the seeded spend authorizations are there in each state, and Ada's usage adds them up", async () => {
    const funds = clients.get("ROLE_FUND_ADMIN")!;
    const [, ada, sam] = sandbox.info.users.slice(1);
    const seeded = sandbox.info.authorizations;
    const got = await Promise.all(seeded.map(async (a) => unwrap(await funds.GET("/api/v1/funds/spend-authorizations/{authorization_id}", { params: { path: { authorization_id: a.id } } })).authorization));
    expect(got.map((a) => a.state)).toEqual(seeded.map((a) => a.state));
    expect(new Set(got.map((a) => a.state))).toEqual(
      new Set(["SPEND_AUTHORIZATION_STATE_CAPTURED", "SPEND_AUTHORIZATION_STATE_RELEASED", "SPEND_AUTHORIZATION_STATE_PENDING", "SPEND_AUTHORIZATION_STATE_DECLINED"]),
    );
    expect(got.some((a) => a.reversedAmount.units !== "0")).toBe(true);
    expect(got.filter((a) => !a.decision.approved).map((a) => a.decision.cause).sort()).toEqual(["SPEND_DECLINE_CAUSE_LIMIT_EXCEEDED", "SPEND_DECLINE_CAUSE_SUSPENDED"]);
    expect(got.find((a) => a.userId === sam!.userId)?.decision.cause).toBe("SPEND_DECLINE_CAUSE_SUSPENDED");

    // Ada sees her own, newest first, and her usage: 40 + 25 - 5 spent, 15 held, of 250.
    const mine = unwrap(await clients.get("ROLE_USER")!.GET("/api/v1/funds/spend-authorizations", { params: { query: { app_id: "app-salesforce" } } })).list;
    expect(mine.map((a) => a.authorization.id).sort()).toEqual(seeded.filter((a) => a.userId === ada!.userId).map((a) => a.id).sort());
    const created = mine.map((a) => a.authorization.createdAt);
    expect(created).toEqual([...created].sort().reverse());
    const { effective } = unwrap(await clients.get("ROLE_USER")!.GET("/api/v1/funds/my/app-limits/{app_id}/effective", { params: { path: { app_id: "app-salesforce" } } }));
    const usd = (units: string) => ({ currencyCode: "USD", units, nanos: 0 });
    expect(effective.usage).toMatchObject({ spent: usd("60"), held: usd("15"), limit: usd("250"), remaining: usd("175") });
  });

  it("the seeding left an audit history: who set each limit, and the automation that suspended Ada's row", async () => {
    const [fundAdmin, ada] = sandbox.info.users.slice(1);
    const history = unwrap(
      await clients.get("ROLE_FUND_ADMIN")!.GET("/api/v1/audit-events", { params: { query: { target_kind: "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT", user_id: ada!.userId, app_id: "app-github" } } }),
    ).list.map((e) => e.auditEvent);
    // Newest first: the card.lost event's execution suspended the row Ada had limited herself.
    expect(history.map((e) => [e.operationId, e.actor.kind])).toEqual([
      ["svc.api.funds.v1.SubjectAppLimitService.Suspend", "AUDIT_ACTOR_KIND_AUTOMATION_EXECUTION"],
      ["svc.api.funds.v1.MyFundLimitsService.SetLimit", "AUDIT_ACTOR_KIND_USER"],
    ]);
    expect(history[0]!.actor.executionId).toBe(sandbox.info.executionIds[0]);
    expect(history[1]!.actor.userId).toBe(ada!.userId);
    const byFundAdmin = unwrap(await clients.get("ROLE_SUPER_ADMIN")!.GET("/api/v1/audit-events", { params: { query: { actor_user_id: fundAdmin!.userId } } })).list;
    expect(new Set(byFundAdmin.map((e) => e.auditEvent.target.kind))).toEqual(new Set(["AUDIT_TARGET_KIND_APP_CAP", "AUDIT_TARGET_KIND_SUBJECT_APP_LIMIT"]));
    // Ada reads the history of her own rows.
    expect(unwrap(await clients.get("ROLE_USER")!.GET("/api/v1/audit-events", {})).list.every((e) => e.auditEvent.target.userId === ada!.userId)).toBe(true);
  });

  it("the seeded events' executions ran", async () => {
    const admin = clients.get("ROLE_SUPER_ADMIN")!;
    expect(sandbox.info.executionIds).toHaveLength(3);
    for (const id of sandbox.info.executionIds) {
      const { automationExecution } = unwrap(await admin.GET("/api/v1/automation_executions/{id}", { params: { path: { id } } }));
      expect(automationExecution.state, id).toBe("AUTOMATION_EXECUTION_STATE_DONE");
    }
  });

  it("its printed commands, followed in order, do what it says: a token that calls, a spend approved before and after the printed events", async () => {
    const shown = recipes(sandbox.info);
    const text = report(sandbox.info);
    let at = 0;
    for (const line of Object.values(shown).flatMap((recipe) => recipe.split("\n"))) {
      const found = text.indexOf(line, at);
      expect(found, `printed, in this order: ${line}`).toBeGreaterThan(at);
      at = found + line.length;
    }
    const run = (script: string) => runToEnd("bash", ["-e", "-c", `cd '${root}'\n${script}`], { BASE_URL: "" });

    const first = await run(Object.values(shown).join("\n"));
    // -e: every command exits 0, the spend (approved) and both sender scripts (2xx) included.
    expect(first.code, first.out).toBe(0);
    expect(first.stdout, "the call with the token").toMatch(/^\{"fundPolicy":/m);
    expect(first.stdout.match(/^=> 200$/gm), "the two sender scripts").toHaveLength(2);
    // The curl recipes: HMAC, then Standard Webhooks, GitHub and Stripe, each event run, with the type its sender gave it.
    const recorded = [...first.stdout.matchAll(/\{"webhookEvent":\{[^{}]*\}\}/g)].map((m) => (JSON.parse(m[0]) as { webhookEvent: { outcome: string; eventType: string | null } }).webhookEvent);
    expect(recorded.map((e) => [e.outcome, e.eventType]), "the curl recipes").toEqual([
      ["WEBHOOK_EVENT_OUTCOME_EXECUTED", null],
      ["WEBHOOK_EVENT_OUTCOME_EXECUTED", "invoice.paid"],
      ["WEBHOOK_EVENT_OUTCOME_EXECUTED", "push"],
      ["WEBHOOK_EVENT_OUTCOME_EXECUTED", "invoice.paid"],
    ]);

    // The events' executions run in the background; once the row they name is suspended, the printed spend again.
    const event = JSON.parse(/--body '(.*)'$/m.exec(shown.hmacEvent)![1]!) as { userId: string; appId: string };
    const funds = clients.get("ROLE_FUND_ADMIN")!;
    const suspension = async () =>
      unwrap(await funds.GET("/api/v1/funds/subject-app-limits/{user_id}/{app_id}", { params: { path: { user_id: event.userId, app_id: event.appId } } })).limit.controls?.suspension;
    await expect.poll(suspension, { timeout: 20_000 }).toBeTruthy();
    const again = await run(shown.spend);
    expect(again.code, again.out).toBe(0);
    expect(again.stdout).toContain('"approved": true');
  }, 120_000);

  it("a restart resets the data: the previous run's users, listeners and credentials are gone", async () => {
    const admin = clients.get("ROLE_SUPER_ADMIN")!;
    const extra = unwrap(await admin.POST("/api/v1/users", { body: { displayName: "Made by the test", email: "made@example.com", roles: ["ROLE_USER"] } }));
    const before = sandbox.info;
    await sandbox.stop();
    sandbox = await startSandbox(port, dir);
    const after = sandbox.info;
    const users = unwrap(await clientOf("ROLE_SUPER_ADMIN").GET("/api/v1/users", { params: { query: { page_size: 100 } } })).list.map((u) => u.user.id);
    expect(users).not.toContain(extra.user.id);
    expect(users.sort()).toEqual([...after.users.map((u) => u.userId), ...after.teamUserIds].sort());
    const oldFundAdmin = before.users.find((u) => u.role === "ROLE_FUND_ADMIN")!;
    const token = await fetch(`${after.baseUrl}/auth/v1/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: oldFundAdmin.clientId, client_secret: oldFundAdmin.clientSecret }),
    });
    expect(token.status).toBe(401);
    const old = await sendWebhookEvent({ url: before.hmac.listenerUrl, body: "{}", auth: { hmac: { secret: before.hmac.webhookSecret } } });
    expect(old.status).toBe(404);
  }, 120_000);

  it("stops with npm: SIGTERM to the npm process ends the sandbox, its server and its JWKS server", async () => {
    const ports = [sandbox.info.baseUrl, sandbox.info.jwt.jwksUrl].map((url) => Number(new URL(url).port));
    for (const p of ports) expect(await accepting(p), `port ${p} before`).toBe(true);
    const stopped = await sandbox.stop();
    expect(stopped.tree.length, "the processes npm started").toBeGreaterThan(0);
    expect(stopped.left, "still running after npm exited").toEqual([]);
    expect(stopped).toMatchObject({ code: 0, signal: null });
    for (const p of ports) expect(await accepting(p), `port ${p} after`).toBe(false);
  });
});
