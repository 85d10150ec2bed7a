// The acceptance flows of a server process, over plain HTTP with the bootstrap super-admin, for
// the tests that start servers of different releases on one database: a token, a subject with a
// limit, spend authorizations and the window's usage, and a webhook delivery that runs.
import { randomUUID } from "node:crypto";
import { hmacSignature } from "../../src/client/webhook-sender.js";

export interface Admin {
  clientId: string;
  clientSecret: string;
}

export interface Answer {
  status: number;
  body: any;
}

export interface Hook {
  automationId: string;
  url: string;
  secret: string;
}

const usd = (units: number) => ({ currencyCode: "USD", units: String(units), nanos: 0 });

export class Acceptance {
  constructor(
    readonly url: string,
    private readonly admin: Admin,
  ) {}

  /** The client credentials grant: 200 with an access token. */
  async token(): Promise<Answer> {
    const response = await fetch(`${this.url}/auth/v1/token`, {
      method: "POST",
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: this.admin.clientId, client_secret: this.admin.clientSecret }),
    });
    return { status: response.status, body: await response.json() };
  }

  /** `method path` with a fresh token of the admin. */
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const token = await this.token();
    if (token.status !== 200) return token;
    const response = await fetch(`${this.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token.body.access_token}`, ...(body === undefined ? {} : { "Content-Type": "application/json" }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  async subject(): Promise<Answer> {
    return this.call("POST", "/api/v1/users", { displayName: "Subject", email: `subject-${randomUUID()}@example.com`, roles: ["ROLE_USER"] });
  }

  /** A limit of `units` USD a month on `appId`. */
  async limit(userId: string, appId: string, units: number): Promise<Answer> {
    return this.call("POST", `/api/v1/funds/subject-app-limits/${userId}/${appId}/limit`, { limit: { amount: { money: usd(units) } }, period: "PERIOD_KIND_MONTHLY" });
  }

  async authorize(userId: string, appId: string, units: number, capture = false, key: string = randomUUID()): Promise<Answer> {
    return this.call("POST", "/api/v1/funds/spend-authorizations", { userId, appId, amount: usd(units), capture }, { "Idempotency-Key": key });
  }

  async effective(userId: string, appId: string): Promise<Answer> {
    return this.call("GET", `/api/v1/funds/subject-app-limits/${userId}/${appId}/effective`);
  }

  /** An automation (no steps) triggered by an HMAC webhook. */
  async hook(): Promise<Hook> {
    const saved = await this.call("POST", "/api/v1/automations", {
      automation: { displayName: `Hook ${randomUUID()}`, isDraft: false, enabled: true, triggers: [{ webhook: { hmac: {} } }], automationSteps: [] },
    });
    if (saved.status !== 200) throw new Error(`CreateAutomation answered ${saved.status}: ${JSON.stringify(saved.body)}`);
    return { automationId: saved.body.automation.id, url: saved.body.automation.triggers[0].webhook.url, secret: saved.body.webhookSecret };
  }

  /** A signed delivery to `hook`; when accepted (200), the state its execution reaches within 20 s. */
  async deliver(hook: Hook): Promise<{ status: number; execution?: string }> {
    const body = JSON.stringify({ event: "upgrade" });
    const eventId = randomUUID();
    const timestamp = String(Math.floor(Date.now() / 1000));
    // To this server, whichever instance's BASE_URL the listener's URL names.
    const response = await fetch(this.url + new URL(hook.url).pathname, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(hook.secret, timestamp, eventId, body) },
      body,
    });
    const answer = (await response.json()) as any;
    if (response.status !== 200) return { status: response.status };
    const id: string = answer.webhookEvent.automationExecutionId;
    const deadline = Date.now() + 20_000;
    let state = "";
    while (Date.now() < deadline) {
      state = (await this.call("GET", `/api/v1/automation_executions/${id}`)).body?.automationExecution?.state ?? "";
      if (state === "AUTOMATION_EXECUTION_STATE_DONE" || state === "AUTOMATION_EXECUTION_STATE_ERROR") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    return { status: 200, execution: state };
  }
}
