// Deliveries from the senders whose signing schemes this API accepts (Standard Webhooks, GitHub,
// Stripe), signed by those senders' libraries, not the server's code: what the server accepts is
// what the senders send. For the tests that call every intake operation.
import { randomUUID } from "node:crypto";
import { sign as githubSign } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { unwrap } from "../../src/client/index.js";
import type { TestServer } from "./server.js";
import { webhookTrigger } from "./triggers.js";

export type SenderKind = "standardWebhooks" | "github" | "stripe";

/** Each kind's intake operation. */
export const SENDER_OPERATIONS = {
  standardWebhooks: "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStandardWebhook",
  github: "svc.api.webhooks.v1.IncomingWebhookService.ReceiveGithubWebhook",
  stripe: "svc.api.webhooks.v1.IncomingWebhookService.ReceiveStripeWebhook",
} as const satisfies Record<SenderKind, string>;

export const SENDER_KINDS = Object.keys(SENDER_OPERATIONS) as SenderKind[];

/** The headers each kind's sender sets besides Content-Type. */
export const SENDER_HEADERS: Record<SenderKind, readonly string[]> = {
  standardWebhooks: ["webhook-id", "webhook-timestamp", "webhook-signature"],
  github: ["X-GitHub-Delivery", "X-GitHub-Event", "X-Hub-Signature-256"],
  stripe: ["Stripe-Signature"],
};

/** A secret of every sender's form that no listener holds. */
export const UNKNOWN_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** The kind whose intake operation `operationId` is; undefined for any other (the seed's Receive among them). */
export const senderKindOf = (operationId: string): SenderKind | undefined => SENDER_KINDS.find((kind) => SENDER_OPERATIONS[kind] === operationId);

export interface SenderDelivery {
  /** The event id: `webhook-id`, `X-GitHub-Delivery`, or (Stripe) the body's `id`, which the caller puts there. */
  id: string;
  /** Unix seconds (Standard Webhooks' `webhook-timestamp`, Stripe's `t=`); GitHub signs none. */
  timestamp: string;
  /** GitHub's `X-GitHub-Event`. */
  event?: string;
}

/** The headers a sender of `kind` sends with `body`, signed with the listener's `secret`. */
export async function senderHeaders(kind: SenderKind, secret: string, body: string, delivery: SenderDelivery): Promise<Record<string, string>> {
  const json = { "Content-Type": "application/json" };
  switch (kind) {
    case "standardWebhooks":
      return {
        ...json,
        "webhook-id": delivery.id,
        "webhook-timestamp": delivery.timestamp,
        "webhook-signature": new Webhook(secret).sign(delivery.id, new Date(Number(delivery.timestamp) * 1000), body),
      };
    case "github":
      return { ...json, "X-GitHub-Delivery": delivery.id, "X-GitHub-Event": delivery.event ?? "push", "X-Hub-Signature-256": await githubSign(secret, body) };
    case "stripe":
      return { ...json, "Stripe-Signature": Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: Number(delivery.timestamp) }) };
  }
}

/** A body of `kind`'s sender: a Stripe event carries its id. */
export const senderBody = (kind: SenderKind, id: string): string => JSON.stringify(kind === "stripe" ? { id, object: "event", type: "invoice.paid" } : { type: "invoice.paid" });

export interface SenderListener {
  listenerId: string;
  url: string;
  /** The secret generated for the listener, answered once. */
  secret: string;
}

/** A published, enabled automation with no steps whose webhook trigger is a listener of `kind`. */
export async function senderListener(ts: TestServer, kind: SenderKind): Promise<SenderListener> {
  const automation = { displayName: `Sent by ${kind}`, isDraft: false, enabled: true, triggers: [{ webhook: { [kind]: {} } }], automationSteps: [] };
  const saved = unwrap(await ts.admin.POST("/api/v1/automations", { body: { automation } as never }));
  const trigger = webhookTrigger(saved.automation);
  return { listenerId: trigger!.listenerId!, url: trigger!.url!, secret: saved.webhookSecret ?? "" };
}

/** A listener of each kind. */
export async function senderListeners(ts: TestServer): Promise<Record<SenderKind, SenderListener>> {
  return Object.fromEntries(await Promise.all(SENDER_KINDS.map(async (kind) => [kind, await senderListener(ts, kind)] as const))) as Record<SenderKind, SenderListener>;
}

/** A new event from `kind`'s sender to its listener, signed at the server's time: the answer's status and body. */
export async function deliver(ts: TestServer, kind: SenderKind, listener: SenderListener): Promise<{ status: number; body: unknown }> {
  const id = `evt_${randomUUID().replaceAll("-", "")}`;
  const body = senderBody(kind, id);
  const headers = await senderHeaders(kind, listener.secret, body, { id, timestamp: String(Math.floor(ts.clock.now() / 1000)) });
  const answer = await fetch(listener.url, { method: "POST", headers, body });
  return { status: answer.status, body: await answer.json() };
}
