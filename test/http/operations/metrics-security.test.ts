// Nothing secret or personal reaches the metrics: after a run that used the operations that carry
// tokens, client and webhook secrets, email addresses, ids and bodies, a scrape in either format
// holds none of the strings the run sent or was answered, on SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { scrape } from "../../support/metrics.js";
import { freePort } from "../../support/process.js";
import { BOOTSTRAP, startTestServer, type TestServer } from "../../support/server.js";
import { amount, funds } from "../limits/helpers.js";
import { money, spends } from "../spends/helpers.js";
import { automationsApi, createHooked, evaluateStep, expectAccepted, newEventId, postRaw, sendHmac } from "../webhooks/helpers.js";

let ts: TestServer;
beforeAll(async () => {
  ts = await startTestServer({ METRICS_PORT: String(await freePort()) });
});
afterAll(async () => ts?.stop());

describe("the metrics, after a run that used secrets, personal data and ids", () => {
  it("hold none of them, in the Prometheus text or in OpenMetrics", async () => {
    const sent: string[] = [BOOTSTRAP.clientId, BOOTSTRAP.clientSecret];
    const answered = <T extends { response: Response }>(r: T): T => {
      sent.push(r.response.headers.get("x-request-id")!);
      return r;
    };

    // Identity: a user with an email address, a credential, a token; a failed attempt.
    const email = "metrics.secret.person@example.com";
    const { user } = unwrap(answered(await ts.admin.POST("/api/v1/users", { body: { displayName: "Zelda Quuxmetric", email, roles: ["ROLE_USER", "ROLE_APP_SERVICE"] } })));
    const appId = "app-metrics-secret-app";
    const { credential, clientSecret } = unwrap(answered(await ts.admin.POST("/api/v1/users/{user_id}/credentials", { params: { path: { user_id: user.id! } }, body: { appIds: [appId] } })));
    const token = async (secret: string) =>
      fetch(`${ts.url}/auth/v1/token`, { method: "POST", headers: { "X-Request-Id": `req-${secret.slice(0, 8)}-caller-id` }, body: new URLSearchParams({ grant_type: "client_credentials", client_id: credential.clientId, client_secret: secret }) });
    const granted = (await (await token(clientSecret)).json()) as { access_token: string };
    expect((await token("wrong-secret-0123456789abcdef")).status).toBe(401);
    sent.push(email, "Zelda Quuxmetric", user.id!, credential.id!, credential.clientId, clientSecret, granted.access_token, "wrong-secret-0123456789abcdef", `req-${clientSecret.slice(0, 8)}-caller-id`);

    // Funds and spends.
    const f = funds(ts.admin);
    unwrap(answered(await f.setLimit(user.id!, appId, { limit: amount("100") })));
    unwrap(answered(await f.suspend(user.id!, "app-metrics-suspended", { reason: "reason-secret-text for the metrics" })));
    unwrap(answered(await f.capSet("app-metrics-capped", { controls: { limit: amount("7") } })));
    unwrap(answered(await f.effective(user.id!, appId)));
    const spend = spends(ts.client({ clientId: credential.clientId, clientSecret }));
    const { authorization } = unwrap(answered(await spend.authorize({ userId: user.id!, appId, amount: money("3"), metadata: { order: "order-secret-4711" } }, "idempotency-secret-key-1")));
    unwrap(answered(await spend.capture(authorization.id!)));
    sent.push(authorization.id!, "app-metrics-suspended", "reason-secret-text", "app-metrics-capped", "order-secret-4711", "idempotency-secret-key-1");

    // Automations and the webhook intake: secrets, a rotated one, listener, event and execution ids, a body.
    const hook = await createHooked(ts, { displayName: "Automation named secretly", steps: [evaluateStep("echo", { who: "ctx.trigger.who" })] });
    const rotated = unwrap(answered(await automationsApi(ts.admin).rotate(hook.id)));
    const eventId = newEventId();
    const event = expectAccepted(await sendHmac(ts, hook.url, rotated.webhookSecret!, '{"who":"body-secret-marker"}', { eventId }));
    expect((await postRaw(hook.url, { headers: { "Content-Type": "application/json", "Webhook-Event-Id": newEventId(), "Webhook-Signature": "v1,forged-signature-marker" }, body: "{}" })).status).toBe(400);
    await ts.server.worker.idle();
    unwrap(answered(await automationsApi(ts.admin).execution(event.automationExecutionId!)));
    sent.push(hook.id, hook.listenerId, hook.secret, rotated.webhookSecret!, eventId, event.automationExecutionId!, "Automation named secretly", "body-secret-marker", "forged-signature-marker");

    // Paths and queries no operation takes.
    expect((await fetch(`${ts.url}/api/v1/path-secret-marker/x`)).status).toBe(404);
    expect((await fetch(`${ts.url}/api/v1/funds/policy?page_token=query-secret-marker`, { headers: { Authorization: `Bearer ${granted.access_token}` } })).status).toBe(400);
    sent.push("path-secret-marker", "query-secret-marker");

    const plain = await scrape(ts.server.metricsUrl!);
    const open = await scrape(ts.server.metricsUrl!, { Accept: "application/openmetrics-text; version=1.0.0" });
    // The run is in the metrics: what is scanned is not an empty page.
    expect(plain.value("tenant_api_http_requests_total", { operation: "svc.api.webhooks.v1.IncomingWebhookService.Receive", status_class: "2xx" })).toBe(1);
    expect(open.value("tenant_api_spend_decisions_total", { outcome: "approved", cause: "SPEND_DECLINE_CAUSE_UNSPECIFIED" })).toBe(1);
    expect(sent.every((s) => typeof s === "string" && s.length >= 8)).toBe(true);
    for (const text of [plain.text, open.text]) {
      const lower = text.toLowerCase();
      expect(sent.filter((s) => lower.includes(s.toLowerCase()))).toEqual([]);
      expect(text).not.toMatch(/@example\.com|Bearer|[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/i);
    }
  });
});
