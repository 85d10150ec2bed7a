// Automations through HTTP: super admins only; the webhook trigger's listener (url, secret shown
// once) through create, update (mask, publishing, keeping, switching and removing the trigger) and
// delete; list pagination; what is refused at save (CEL with path and position, blocked extension
// limit, CIDRs, JWKS URLs with and without JWKS_ALLOW_INSECURE); and RotateWebhookSecret with its
// grace period.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap, type ApiClient } from "../../../src/client/index.js";
import { startTestServer, type TestServer } from "../../support/server.js";
import { expectError } from "../limits/helpers.js";
import {
  automationsApi,
  createHooked,
  evaluateStep,
  expectAccepted,
  expectRefused,
  sendHmac,
  shownStep,
  startAutomationsServer,
  type AutomationsApi,
  type Hooked,
  type Step,
} from "../webhooks/helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const HOUR = 3_600_000;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

let ts: TestServer;
let api: AutomationsApi;

beforeAll(async () => void ({ ts, api } = await startAutomationsServer()));
afterAll(async () => ts?.stop());

const get = async (id: string) => unwrap(await api.get(id)).automation;
const intakeStatus = async (hook: Pick<Hooked, "url" | "secret">) => (await sendHmac(ts, hook.url, hook.secret)).status;

describe("only super admins (403 for ROLE_FUND_ADMIN and ROLE_USER on every operation)", () => {
  it("every automation, execution and delivery-log operation is 403 for the other roles and 401 without a token", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("s", { ok: "true" })] });
    const event = expectAccepted(await sendHmac(ts, hook.url, hook.secret));
    await ts.server.worker.idle();
    const fundAdmin = await ts.userClient(["ROLE_FUND_ADMIN"]);
    const user = await ts.userClient(["ROLE_USER"]);
    const calls = (client: ApiClient) => {
      const a = automationsApi(client);
      return {
        create: () => a.create({ displayName: "x" }),
        get: () => a.get(hook.id),
        update: () => a.update(hook.id, { displayName: "hijacked" }, "displayName"),
        delete: () => a.delete(hook.id),
        list: () => a.list(),
        rotate: () => a.rotate(hook.id),
        check: () => a.check({ automationSteps: [] }),
        events: () => a.events(hook.id),
        executions: () => a.executions({ automation_id: hook.id }),
        execution: () => a.execution(event.automationExecutionId!),
      };
    };
    for (const client of [fundAdmin.client, user.client]) {
      for (const [name, call] of Object.entries(calls(client))) {
        const answer = await call();
        expect(answer.response.status, name).toBe(403);
        expectError(answer, 403, "ROLE_NOT_ALLOWED");
      }
    }
    for (const [name, call] of Object.entries(calls(ts.anonymous))) expect((await call()).response.status, name).toBe(401);
    // Nothing changed: same name, same secret, listener still there.
    expect((await get(hook.id)).displayName).toBe(hook.automation.displayName);
    expect(await intakeStatus(hook)).toBe(200);
    // Another super admin may.
    const other = await ts.userClient(["ROLE_SUPER_ADMIN"]);
    expect((await automationsApi(other.client).get(hook.id)).response.status).toBe(200);
  });
});

describe("create and read", () => {
  it("an HMAC trigger gets a listener: url = BASE_URL + /api/v1/webhooks/incoming/{listenerId}, and a secret shown once", async () => {
    const saved = unwrap(
      await api.create({ displayName: "Card lost", description: "suspends", triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["127.0.0.0/8"] } }] }),
    );
    const { automation, webhookSecret } = saved;
    const trigger = webhookTrigger(automation);
    expect(trigger?.listenerId).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(trigger?.url).toBe(`${ts.url}/api/v1/webhooks/incoming/${trigger?.listenerId}`);
    expect(trigger).toMatchObject({ hmac: {}, allowedSourceCidrs: ["127.0.0.0/8"] });
    expect(webhookSecret).toMatch(SECRET);
    expect(Buffer.from(webhookSecret!, "base64url")).toHaveLength(32);
    // Defaults: a draft, enabled, no steps, never executed.
    expect(automation).toMatchObject({ displayName: "Card lost", description: "suspends", isDraft: true, enabled: true, automationSteps: [], lastExecutedAt: null });
    expect(automation.createdAt).toBe(new Date(ts.clock.now()).toISOString());

    // The secret is never readable again: not by GET, not in the list.
    const read = unwrap(await api.get(automation.id!));
    expect(read).toEqual({ automation });
    expect(JSON.stringify(read)).not.toContain(webhookSecret);
    expect("webhookSecret" in read).toBe(false);
    let listed = "";
    for (let token = "", first = true; first || token !== ""; first = false) {
      const page = unwrap(await api.list({ page_size: 100, page_token: token }));
      listed += JSON.stringify(page);
      token = page.nextPageToken;
    }
    expect(listed).toContain(automation.id);
    expect(listed).not.toContain(webhookSecret);

    // And it works: the listener accepts an event signed with it (a draft: recorded, not run).
    expect(expectAccepted(await sendHmac(ts, trigger!.url!, webhookSecret!)).outcome).toBe("WEBHOOK_EVENT_OUTCOME_NOT_RUN_DRAFT");
  });

  it("two automations get two listeners and two different secrets", async () => {
    const a = await createHooked(ts);
    const b = await createHooked(ts);
    expect(a.listenerId).not.toBe(b.listenerId);
    expect(a.secret).not.toBe(b.secret);
    expect((await sendHmac(ts, a.url, b.secret)).status).toBe(401);
  });

  it("a JWT trigger gets a listener and no secret", async () => {
    const saved = unwrap(await api.create({ displayName: "jwt", triggers: [{ webhook: { jwt: { jwksUrl: "http://127.0.0.1:9/jwks.json" } } }] }));
    expect(saved.webhookSecret).toBeNull();
    const trigger = webhookTrigger(saved.automation);
    expect(trigger).toMatchObject({ jwt: { jwksUrl: "http://127.0.0.1:9/jwks.json" }, allowedSourceCidrs: [] });
    expect(trigger?.url).toBe(`${ts.url}/api/v1/webhooks/incoming/${trigger?.listenerId}`);
  });

  it("no trigger: no listener, no secret", async () => {
    const saved = unwrap(await api.create({ displayName: "manual" }));
    expect(saved.webhookSecret).toBeNull();
    expect(saved.automation.triggers).toEqual([]);
  });

  it("an unknown id is 404 for get, update, delete, rotate and the delivery log", async () => {
    expectError(await api.get("aut_doesNotExist"), 404, "AUTOMATION_NOT_FOUND");
    expectError(await api.update("aut_doesNotExist", { displayName: "x" }, "displayName"), 404, "AUTOMATION_NOT_FOUND");
    expectError(await api.delete("aut_doesNotExist"), 404, "AUTOMATION_NOT_FOUND");
    expectError(await api.rotate("aut_doesNotExist"), 404, "AUTOMATION_NOT_FOUND");
    expectError(await api.events("aut_doesNotExist"), 404, "AUTOMATION_NOT_FOUND");
    expectError(await api.execution("exe_doesNotExist"), 404, "EXECUTION_NOT_FOUND");
  });
});

describe("update", () => {
  it("changes only the fields named in updateMask; an unknown or empty mask is 400", async () => {
    const hook = await createHooked(ts, { isDraft: true, displayName: "before" });
    for (const mask of ["displayName,colour", "webhookSecret", "id", "lastExecutedAt", "", "displayName,", "displayName, description"]) {
      expectError(await api.update(hook.id, { displayName: "x" }, mask), 400);
    }
    // isDraft and enabled must be present when named.
    expectError(await api.update(hook.id, { displayName: "x" }, "isDraft"), 400);
    expectError(await api.update(hook.id, { displayName: "x" }, "enabled"), 400);
    expect((await get(hook.id)).displayName).toBe("before");

    ts.clock.advance(60_000);
    const published = unwrap(await api.update(hook.id, { displayName: "ignored", description: "ignored", isDraft: false, enabled: false }, "isDraft")).automation;
    expect(published).toMatchObject({ displayName: "before", description: "", isDraft: false, enabled: true });
    expect(published.updatedAt).toBe(new Date(ts.clock.now()).toISOString());
    expect(published.createdAt).toBe(hook.automation.createdAt);
    const renamed = unwrap(await api.update(hook.id, { displayName: "after", description: "now described" }, "displayName,description")).automation;
    expect(renamed).toMatchObject({ displayName: "after", description: "now described", isDraft: false });
    // A named field absent from the body is cleared.
    expect(unwrap(await api.update(hook.id, { displayName: "after" }, "description")).automation.description).toBe("");
    // The listener was not touched by any of this.
    expect(renamed.triggers).toEqual(hook.automation.triggers);
    expect(await intakeStatus(hook)).toBe(200);
  });

  it("a save that keeps the HMAC trigger keeps listenerId, url and secret (no new secret shown)", async () => {
    const hook = await createHooked(ts);
    const saved = unwrap(await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["127.0.0.0/8"] } }] }, "triggers"));
    expect(saved.webhookSecret).toBeNull();
    const trigger = webhookTrigger(saved.automation);
    expect(trigger).toMatchObject({ listenerId: hook.listenerId, url: hook.url, allowedSourceCidrs: ["127.0.0.0/8"] });
    expect(await intakeStatus(hook)).toBe(200);
    // The new CIDRs apply at once.
    unwrap(await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["10.0.0.0/8"] } }] }, "triggers"));
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 403, "SOURCE_NOT_ALLOWED");
  });

  it("switching HMAC → JWT keeps the listener and ends the secret; JWT → HMAC shows a new secret", async () => {
    const hook = await createHooked(ts);
    const toJwt = unwrap(await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { jwt: { jwksUrl: "http://127.0.0.1:9/jwks.json" } } }] }, "triggers"));
    expect(toJwt.webhookSecret).toBeNull();
    expect(webhookTrigger(toJwt.automation)).toMatchObject({ listenerId: hook.listenerId, url: hook.url, jwt: { jwksUrl: "http://127.0.0.1:9/jwks.json" } });
    // The listener now wants a JWT: the HMAC signature does not authenticate.
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 401, "MISSING_AUTHORIZATION");
    expectError(await api.rotate(hook.id), 400, "NOT_HMAC_TRIGGER");

    const back = unwrap(await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { hmac: {} } }] }, "triggers"));
    expect(back.webhookSecret).toMatch(SECRET);
    expect(back.webhookSecret).not.toBe(hook.secret);
    expect(webhookTrigger(back.automation)).toMatchObject({ listenerId: hook.listenerId, url: hook.url, hmac: {} });
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 401, "INVALID_SIGNATURE");
    expect(await intakeStatus({ url: hook.url, secret: back.webhookSecret! })).toBe(200);
  });

  it("removing the trigger removes the listener (its URL is 404); adding one back creates a new listener", async () => {
    const hook = await createHooked(ts);
    const saved = unwrap(await api.update(hook.id, { displayName: "x", triggers: [] }, "triggers"));
    expect(saved.automation.triggers).toEqual([]);
    expect(saved.webhookSecret).toBeNull();
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 404, "LISTENER_NOT_FOUND");
    expectError(await api.rotate(hook.id), 400, "NOT_HMAC_TRIGGER");

    const again = unwrap(await api.update(hook.id, { displayName: "x", triggers: [{ webhook: { hmac: {} } }] }, "triggers"));
    const trigger = webhookTrigger(again.automation);
    expect(trigger?.listenerId).not.toBe(hook.listenerId);
    expect(again.webhookSecret).toMatch(SECRET);
    expect(await intakeStatus({ url: trigger!.url!, secret: again.webhookSecret! })).toBe(200);
    expectRefused(await sendHmac(ts, hook.url, again.webhookSecret!), 404, "LISTENER_NOT_FOUND");
  });

  it("steps are replaced by a save naming automationSteps, and checked like at create", async () => {
    const hook = await createHooked(ts, { steps: [evaluateStep("one", { a: "1" })] });
    const steps: Step[] = [evaluateStep("one", { a: "2" }), evaluateStep("two", { b: "ctx.steps.one.a" })];
    expect(unwrap(await api.update(hook.id, { displayName: "x", automationSteps: steps }, "automationSteps")).automation.automationSteps).toEqual(steps.map(shownStep));
    const bad = await api.update(hook.id, { displayName: "x", automationSteps: [evaluateStep("one", { a: "ctx.steps.two.b" }), evaluateStep("two", { b: "1" })] }, "automationSteps");
    expectError(bad, 400, "CEL_INVALID");
    expect((await get(hook.id)).automationSteps).toEqual(steps.map(shownStep));
  });
});

describe("delete", () => {
  it("removes the automation and its listener: GET 404, intake 404, delete again 404", async () => {
    const hook = await createHooked(ts);
    expect(await intakeStatus(hook)).toBe(200);
    expect(unwrap(await api.delete(hook.id))).toEqual({});
    expectError(await api.get(hook.id), 404, "AUTOMATION_NOT_FOUND");
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 404, "LISTENER_NOT_FOUND");
    expectError(await api.delete(hook.id), 404, "AUTOMATION_NOT_FOUND");
  });
});

describe("list", () => {
  it("pages by id with page_size (below 10 read as 10) and nextPageToken, each automation once", async () => {
    const mine = new Set<string>();
    for (let i = 0; i < 12; i++) mine.add(unwrap(await api.create({ displayName: `paged ${i}` })).automation.id!);
    const first = unwrap(await api.list({ page_size: 3 }));
    expect(first.list).toHaveLength(10);
    expect(first.nextPageToken).not.toBe("");
    const ids: string[] = [];
    let token = "";
    do {
      const page = unwrap(await api.list({ page_size: 10, page_token: token }));
      expect(page.list.length).toBeLessThanOrEqual(10);
      ids.push(...page.list.map((item) => item.automation.id!));
      token = page.nextPageToken;
    } while (token !== "");
    expect(ids.length).toBeGreaterThanOrEqual(22);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of mine) expect(ids).toContain(id);
    // Default page size 25.
    const all = unwrap(await api.list());
    expect(all.list).toHaveLength(Math.min(25, ids.length));
    expectError(await api.list({ page_token: "forged-token" }), 400);
  });
});

describe("what is refused at save (400)", () => {
  const save = (steps: unknown[], triggers: unknown[] = []) => api.create({ displayName: "refused", automationSteps: steps, triggers });
  const celError = async (steps: unknown[], path: string, position: number) => {
    const answer = await save(steps);
    expectError(answer, 400, "CEL_INVALID");
    const info = (answer.error as { details: { "@type": string; metadata?: Record<string, string> }[] }).details.find((d) => d["@type"].endsWith("ErrorInfo"));
    expect(info?.metadata).toEqual({ path, position: String(position) });
  };

  it("a CEL syntax error: CEL_INVALID with the field's path and the position", async () => {
    await celError([evaluateStep("a", { x: "ctx.trigger.x ==" })], "automation.automationSteps[0].evaluateExpressions.expressions[0].expression", 16);
    await celError([evaluateStep("a", { ok: "true", x: "ctx.trigger.x == )" })], "automation.automationSteps[0].evaluateExpressions.expressions[1].expression", 17);
  });

  it("a reference to a step that is not earlier (unknown, later, or itself)", async () => {
    await celError([evaluateStep("a", { x: "ctx.steps.nope.x" })], "automation.automationSteps[0].evaluateExpressions.expressions[0].expression", 10);
    await celError(
      [evaluateStep("a", { x: "1" }), evaluateStep("b", { y: "true" }, "ctx.steps.a.x == 1 && ctx.steps.c.y"), evaluateStep("c", { y: "true" })],
      "automation.automationSteps[1].skipIfTrueCel",
      32,
    );
    await celError([evaluateStep("a", { x: "ctx.steps.a.x" })], "automation.automationSteps[0].evaluateExpressions.expressions[0].expression", 10);
  });

  it("a skipIfTrueCel of the wrong type, and the wrong type for a limit step's field", async () => {
    await celError([evaluateStep("a", { x: "1" }, '"yes"')], "automation.automationSteps[0].skipIfTrueCel", 0);
    await celError([evaluateStep("a", { x: "1" }, "1 + 2")], "automation.automationSteps[0].skipIfTrueCel", 0);
    await celError([{ stepName: "s", suspendAppLimit: { userIdCel: "42", appIdCel: "ctx.trigger.app" } }], "automation.automationSteps[0].suspendAppLimit.userIdCel", 0);
    await celError([{ stepName: "s", suspendAppLimit: { userIdCel: "ctx.trigger.u", appIdCel: "ctx.trigger.app", reasonCel: "true" } }], "automation.automationSteps[0].suspendAppLimit.reasonCel", 0);
    await celError([{ stepName: "s", suspendAppLimit: { userIdCel: "nobody.id", appIdCel: "ctx.trigger.app" } }], "automation.automationSteps[0].suspendAppLimit.userIdCel", 0);
  });

  it("the same checks on update; a refused save changes nothing", async () => {
    const hook = await createHooked(ts);
    const answer = await api.update(hook.id, { displayName: "x", automationSteps: [evaluateStep("a", { x: "ctx.trigger.x ==" })] }, "automationSteps");
    expectError(answer, 400, "CEL_INVALID");
    expect((await get(hook.id)).automationSteps).toEqual([]);
  });

  it("a blocked limit in setAppLimitExtension", async () => {
    const step = { stepName: "ext", setAppLimitExtension: { userIdCel: "ctx.trigger.u", appIdCel: "ctx.trigger.a", limit: { blocked: {} }, expiresAtCel: "ctx.trigger.until" } };
    expectError(await save([step]), 400);
    const unlimited = { ...step, setAppLimitExtension: { ...step.setAppLimitExtension, limit: { unlimited: {} } } };
    expect((await save([unlimited])).response.status).toBe(200);
    const amount = { ...step, setAppLimitExtension: { ...step.setAppLimitExtension, limit: { amount: { money: { currencyCode: "EUR", units: "5", nanos: 0 } } } } };
    expectError(await save([amount]), 400);
  });

  it("a duplicate step name", async () => {
    expectError(await save([evaluateStep("a", { x: "1" }), evaluateStep("a", { y: "2" })]), 400, "DUPLICATE_STEP_NAME");
  });

  it("a bad CIDR: host bits set, no prefix, out-of-range prefix, not an address", async () => {
    for (const cidr of ["10.0.0.1/8", "10.0.0.0", "10.0.0.0/33", "2001:db8::1/32", "example.com/24", "::1/129"]) {
      const answer = await save([], [{ webhook: { hmac: {}, allowedSourceCidrs: [cidr] } }]);
      expectError(answer, 400);
    }
    expectError(await save([], [{ webhook: { hmac: {}, allowedSourceCidrs: ["127.0.0.0/8", "10.0.0.1/8"] } }]), 400, "INVALID_CIDR");
  });

  it("more than one trigger, or a trigger with both methods", async () => {
    expectError(await save([], [{ webhook: { hmac: {} } }, { webhook: { hmac: {} } }]), 400);
    expectError(await save([], [{ webhook: { hmac: {}, jwt: { jwksUrl: "https://example.com/jwks.json" } } }]), 400);
  });
});

describe("JWKS URLs without JWKS_ALLOW_INSECURE", () => {
  let secure: TestServer;
  beforeAll(async () => {
    secure = await startTestServer({ JWKS_ALLOW_INSECURE: "0" });
  });
  afterAll(async () => secure?.stop());

  it("http: and loopback or private https: addresses are refused at save; a public https: URL is saved", async () => {
    const a = automationsApi(secure.admin);
    for (const jwksUrl of ["http://127.0.0.1:8080/jwks.json", "http://jwks.example.com/jwks.json", "https://127.0.0.1/jwks.json", "https://[::1]/jwks.json", "https://10.1.2.3/jwks.json", "https://169.254.169.254/latest"]) {
      expectError(await a.create({ displayName: "jwt", triggers: [{ webhook: { jwt: { jwksUrl } } }] }), 400, "INVALID_JWKS_URL");
    }
    const saved = unwrap(await a.create({ displayName: "jwt", triggers: [{ webhook: { jwt: { jwksUrl: "https://jwks.example.com/.well-known/jwks.json" } } }] }));
    expect(webhookTrigger(saved.automation)).toMatchObject({ jwt: { jwksUrl: "https://jwks.example.com/.well-known/jwks.json" } });
    // And an update switching to an http: URL is refused too.
    expectError(await a.update(saved.automation.id!, { displayName: "jwt", triggers: [{ webhook: { jwt: { jwksUrl: "http://jwks.example.com/jwks.json" } } }] }, "triggers"), 400, "INVALID_JWKS_URL");
  });
});

describe("RotateWebhookSecret", () => {
  it("a new secret works at once; the previous one works during the 24 h grace period and not after", async () => {
    const hook = await createHooked(ts);
    const rotated = unwrap(await api.rotate(hook.id));
    expect(rotated.webhookSecret).toMatch(SECRET);
    expect(rotated.webhookSecret).not.toBe(hook.secret);
    expect(webhookTrigger(rotated.automation)).toMatchObject({ listenerId: hook.listenerId, url: hook.url });
    expect(JSON.stringify(rotated)).not.toContain(hook.secret);
    const next = { url: hook.url, secret: rotated.webhookSecret };

    expect(await intakeStatus(next)).toBe(200);
    expect(await intakeStatus(hook)).toBe(200);
    ts.clock.advance(24 * HOUR - 60_000);
    expect(await intakeStatus(hook)).toBe(200);
    ts.clock.advance(61_000);
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 401, "INVALID_SIGNATURE");
    expect(await intakeStatus(next)).toBe(200);
  });

  it("rotating again ends the grace period of the secret before", async () => {
    const hook = await createHooked(ts);
    const second = unwrap(await api.rotate(hook.id)).webhookSecret;
    const third = unwrap(await api.rotate(hook.id)).webhookSecret;
    expect(new Set([hook.secret, second, third]).size).toBe(3);
    expectRefused(await sendHmac(ts, hook.url, hook.secret), 401, "INVALID_SIGNATURE");
    expect(await intakeStatus({ url: hook.url, secret: second })).toBe(200);
    expect(await intakeStatus({ url: hook.url, secret: third })).toBe(200);
  });

  it("a JWT automation, or one without a trigger, is 400 NOT_HMAC_TRIGGER", async () => {
    const jwt = await createHooked(ts, { jwksUrl: "http://127.0.0.1:9/jwks.json" });
    expectError(await api.rotate(jwt.id), 400, "NOT_HMAC_TRIGGER");
    const none = unwrap(await api.create({ displayName: "no trigger" })).automation;
    expectError(await api.rotate(none.id!), 400, "NOT_HMAC_TRIGGER");
  });
});
