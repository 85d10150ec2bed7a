// What the bench sets up through the API before measuring: an access token, automations with
// their webhook listeners, a subject user and its rows. Plain fetch, failing loudly on any
// unexpected status.
import { hmacSignature } from "../src/client/webhook-sender.js";

export interface Credentials {
  clientId: string;
  clientSecret: string;
}

/** The headers of a webhook delivery to an HMAC listener, signed now. */
export function hmacHeaders(secret: string, eventId: string, body: string): Record<string, string> {
  const timestamp = String(Math.floor(Date.now() / 1000));
  return { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(secret, timestamp, eventId, body) };
}

const CALC_STEPS = [{ stepName: "calc", evaluateExpressions: { expressions: [{ name: "n", expression: "ctx.trigger.n * 2.0" }] } }];

export class Api {
  constructor(
    readonly origin: string,
    private readonly token: string,
  ) {}

  static async login(origin: string, credentials: Credentials): Promise<Api> {
    const r = await fetch(`${origin}/auth/v1/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_id: credentials.clientId, client_secret: credentials.clientSecret }),
    });
    if (r.status !== 200) throw new Error(`token request answered ${r.status}: ${await r.text()}`);
    return new Api(origin, ((await r.json()) as { access_token: string }).access_token);
  }

  /** `Authorization` and `Content-Type` headers of an authenticated JSON request. */
  get headers(): Record<string, string> {
    return { Authorization: `Bearer ${this.token}`, "Content-Type": "application/json" };
  }

  async call<T = any>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown, expect = 200): Promise<T> {
    const r = await fetch(this.origin + path, { method, headers: this.headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    if (r.status !== expect) throw new Error(`${method} ${path} answered ${r.status} (expected ${expect}): ${text.slice(0, 500)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The caller's user id: the `sub` of its access token. */
  me(): string {
    const payload = JSON.parse(Buffer.from(this.token.split(".")[1] ?? "", "base64url").toString("utf8")) as { sub?: string };
    if (!payload.sub) throw new Error("the access token has no sub");
    return payload.sub;
  }

  async createUser(displayName: string, email: string): Promise<string> {
    const { user } = await this.call<{ user: { id: string } }>("POST", "/api/v1/users", { displayName, email, roles: ["ROLE_USER"] });
    return user.id;
  }

  /** A new API credential of the user. */
  async createCredential(userId: string): Promise<Credentials> {
    const { credential, clientSecret } = await this.call<{ credential: { clientId: string }; clientSecret: string }>("POST", `/api/v1/users/${userId}/credentials`, {});
    return { clientId: credential.clientId, clientSecret };
  }

  /** A published, enabled automation with a webhook trigger and `steps` (by default one `evaluateExpressions` step). */
  async createWebhookAutomation(name: string, trigger: { hmac: Record<string, never> } | { jwt: { jwksUrl: string } }, steps: unknown[] = CALC_STEPS): Promise<{ id: string; path: string; url: string; secret?: string }> {
    const created = await this.call<{ automation: { id: string; triggers: Array<{ webhook: { url: string } }> }; webhookSecret?: string }>("POST", "/api/v1/automations", {
      automation: {
        displayName: name,
        isDraft: false,
        enabled: true,
        triggers: [{ webhook: trigger }],
        automationSteps: steps,
      },
    });
    const url = created.automation.triggers[0]?.webhook.url;
    if (!url) throw new Error("the automation has no listener URL");
    return { id: created.automation.id, path: new URL(url).pathname, url, ...(created.webhookSecret ? { secret: created.webhookSecret } : {}) };
  }
}
