// Steady traffic of spends and webhook deliveries against a server process, over plain HTTP with
// requests every release answers the same way, for the tests that change the database under a
// serving release (an upgrade's migrations). Every request is sent until it has an answer other
// than 503: an authorization with the same Idempotency-Key, a delivery with the same event id (a
// 409 DUPLICATE_EVENT then says an earlier attempt was recorded). Every answer is kept by status, so
// that a test can require that none was a 500 and check what the answers add up to.
import { randomUUID } from "node:crypto";
import { hmacSignature } from "../../src/client/webhook-sender.js";
import type { Admin, Hook } from "./acceptance.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface SteadyLoadOptions {
  url: string;
  admin: Admin;
  /** The subjects spending, each against its limit on `appId`. */
  subjects: string[];
  appId: string;
  hook: Hook;
  spendsPerSecond: number;
  deliveriesPerSecond: number;
  /** The amount of each authorization, in whole units (captured at once). */
  units: number;
}

export class SteadyLoad {
  /** How often each status was answered (503s included, each attempt counted). */
  readonly statuses = new Map<number, number>();
  /** The 5xx answers other than 503, with what was sent. */
  readonly faults: string[] = [];
  /** Approved (captured) units, per subject. */
  readonly approved = new Map<string, number>();
  declined = 0;
  /** The event ids the intake recorded (200, or 409 after an unanswered attempt). */
  readonly accepted = new Set<string>();
  private running = true;
  private readonly pending: Promise<void>[] = [];
  /** One token for every request: the release before locks a client out after five token requests at once. */
  private token: Promise<string> | undefined;

  constructor(private readonly o: SteadyLoadOptions) {}

  start(): void {
    this.pending.push(this.pace(this.o.spendsPerSecond, (i) => this.spend(this.o.subjects[i % this.o.subjects.length]!)));
    this.pending.push(this.pace(this.o.deliveriesPerSecond, () => this.deliver()));
  }

  /** Stops sending, and waits for every request sent to be answered. */
  async stop(): Promise<void> {
    this.running = false;
    for (let i = 0; i < this.pending.length; i++) await this.pending[i];
  }

  private async pace(perSecond: number, send: (i: number) => Promise<void>): Promise<void> {
    const started = performance.now();
    for (let i = 0; this.running; i++) {
      this.pending.push(send(i));
      const next = started + ((i + 1) * 1000) / perSecond;
      await sleep(Math.max(0, next - performance.now()));
    }
  }

  private count(status: number, what: string, body: string): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    if (status >= 500 && status !== 503) this.faults.push(`${status} to ${what}: ${body}`);
  }

  /** `send` until it is answered other than 503 (a fault is answered too, and counted). */
  private async untilAnswered(what: string, send: () => Promise<Response>): Promise<{ status: number; body: any }> {
    for (;;) {
      const response = await send();
      const text = await response.text();
      this.count(response.status, what, text);
      if (response.status !== 503) return { status: response.status, body: text ? JSON.parse(text) : undefined };
      await sleep(Number(response.headers.get("retry-after") ?? "1") * 1000);
    }
  }

  private accessToken(): Promise<string> {
    this.token ??= this.untilAnswered("a token request", () =>
      fetch(`${this.o.url}/auth/v1/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: this.o.admin.clientId, client_secret: this.o.admin.clientSecret }) }),
    ).then((answer) => {
      if (answer.status !== 200) throw new Error(`the token endpoint answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body.access_token as string;
    });
    return this.token;
  }

  private async spend(userId: string): Promise<void> {
    const token = await this.accessToken();
    const key = randomUUID();
    const body = JSON.stringify({ userId, appId: this.o.appId, amount: { currencyCode: "USD", units: String(this.o.units), nanos: 0 }, capture: true });
    const answer = await this.untilAnswered("an authorization", () =>
      fetch(`${this.o.url}/api/v1/funds/spend-authorizations`, { method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", "Idempotency-Key": key }, body }),
    );
    const state = answer.body?.authorization?.state;
    if (state === "SPEND_AUTHORIZATION_STATE_CAPTURED") this.approved.set(userId, (this.approved.get(userId) ?? 0) + this.o.units);
    else if (state === "SPEND_AUTHORIZATION_STATE_DECLINED") this.declined++;
  }

  private async deliver(): Promise<void> {
    const eventId = randomUUID();
    const body = JSON.stringify({ event: "steady-load", eventId });
    const answer = await this.untilAnswered("a webhook delivery", () => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      return fetch(this.o.url + new URL(this.o.hook.url).pathname, {
        method: "POST",
        headers: { "Content-Type": "application/json", "Webhook-Timestamp": timestamp, "Webhook-Event-Id": eventId, "Webhook-Signature": hmacSignature(this.o.hook.secret, timestamp, eventId, body) },
        body,
      });
    });
    if (answer.status === 200 || (answer.status === 409 && answer.body?.details?.[0]?.reason === "DUPLICATE_EVENT")) this.accepted.add(eventId);
  }
}
