// Kept webhook listeners on several server processes sharing one database, as behind a load
// balancer: each kind of change made through instance 0 (a secret rotated, the automation disabled
// or unpublished, its source CIDRs changed, the automation deleted) shows in instance 1's
// deliveries within 1 s, measured from before the change was sent. Instance 1 has first read and
// kept the listener.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unwrap } from "../../../src/client/index.js";
import { testDialect } from "../../support/database.js";
import { startInstances, type Instances } from "../../support/instances.js";
import { BOUND_MS, msUntilSeen } from "../identity/principal-cache-helpers.js";
import { automationsApi, errorInfo, hmacHeaders, postRaw, type AutomationsApi } from "./helpers.js";
import { webhookTrigger } from "../../support/triggers.js";

const ADMIN = { clientId: "listener-admin", clientSecret: "listener-admin-secret-0123456789" };

let cluster: Instances | undefined;
let api: AutomationsApi;

beforeAll(async () => {
  // Rate limits off: the waits deliver many times a second.
  cluster = await startInstances(2, ADMIN, "http://tenant.example.test", { RATE_LIMIT: "off" });
  api = automationsApi(cluster.clients[0]!);
}, 120_000);
afterAll(async () => cluster?.stop(), 120_000);

interface Hook {
  id: string;
  listenerId: string;
  secret: string;
}

/** What a delivery to instance `i` signed with `secret` got: its outcome when accepted, else its status and reason. */
async function deliver(i: number, hook: Hook, secret = hook.secret): Promise<string> {
  const body = '{"hello":"world"}';
  const headers = hmacHeaders(secret, body, String(Math.floor(Date.now() / 1000)), randomUUID());
  const a = await postRaw(`${cluster!.instances[i]!.url}/api/v1/webhooks/incoming/${hook.listenerId}`, { headers, body });
  return a.status === 200 ? String(a.body.webhookEvent.outcome) : `${a.status} ${errorInfo(a.body).reason ?? ""}`.trim();
}

/** A published, enabled HMAC automation made through instance 0, whose listener both instances read and keep. */
async function hooked(): Promise<Hook> {
  const saved = unwrap(await api.create({ displayName: "kept", isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps: [] }));
  const hook = { id: saved.automation.id!, listenerId: webhookTrigger(saved.automation)!.listenerId!, secret: saved.webhookSecret! };
  for (const i of [0, 1]) for (let n = 0; n < 3; n++) expect(await deliver(i, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
  return hook;
}

/** Milliseconds from `since` until instance 1 answers `expected` to `hook`'s deliveries signed with `secret`. */
const msUntilInstance1 = (since: number, hook: Hook, expected: string, secret?: string) =>
  msUntilSeen(since, async () => {
    const got = await deliver(1, hook, secret);
    return got === expected || `instance 1 still answers ${got}, expected ${expected}`;
  });

const update = async (id: string, fields: object, mask: string) => unwrap(await api.update(id, { displayName: "kept", ...fields }, mask));

describe(`kept webhook listeners on two instances on one ${testDialect()} database`, () => {
  it("a secret rotated through instance 0: instance 1 accepts the new secret within 1 s, and the replaced one in its grace period", async () => {
    const hook = await hooked();
    const since = performance.now();
    const rotated = unwrap(await api.rotate(hook.id)).webhookSecret;
    expect(await deliver(0, hook, rotated)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
    expect(await msUntilInstance1(since, hook, "WEBHOOK_EVENT_OUTCOME_EXECUTED", rotated)).toBeLessThan(BOUND_MS);
    expect(await deliver(1, hook)).toBe("WEBHOOK_EVENT_OUTCOME_EXECUTED");
  });

  for (const change of [
    { name: "the automation disabled", fields: { enabled: false }, mask: "enabled", expected: "WEBHOOK_EVENT_OUTCOME_NOT_RUN_DISABLED" },
    { name: "the automation unpublished", fields: { isDraft: true }, mask: "isDraft", expected: "WEBHOOK_EVENT_OUTCOME_NOT_RUN_DRAFT" },
    { name: "the source CIDRs changed", fields: { triggers: [{ webhook: { hmac: {}, allowedSourceCidrs: ["10.0.0.0/8"] } }] }, mask: "triggers", expected: "403 SOURCE_NOT_ALLOWED" },
  ]) {
    it(`${change.name} through instance 0: seen there at once, and on instance 1 within 1 s`, async () => {
      const hook = await hooked();
      const since = performance.now();
      await update(hook.id, change.fields, change.mask);
      expect(await deliver(0, hook)).toBe(change.expected);
      expect(await msUntilInstance1(since, hook, change.expected)).toBeLessThan(BOUND_MS);
    });
  }

  it("the automation deleted through instance 0: its listener is gone there at once, and on instance 1 within 1 s", async () => {
    const hook = await hooked();
    const since = performance.now();
    unwrap(await api.delete(hook.id));
    expect(await deliver(0, hook)).toBe("404 LISTENER_NOT_FOUND");
    expect(await msUntilInstance1(since, hook, "404 LISTENER_NOT_FOUND")).toBeLessThan(BOUND_MS);
  });
});
