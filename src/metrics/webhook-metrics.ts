// The webhook intake's deliveries, to any of its operations, per authentication method (the
// listener's kind; `unknown` when the answer came before the listener was found): accepted, duplicate (409 DUPLICATE_EVENT) or refused,
// and the refused ones by reason. Read from the intake's answers, as the HTTP metrics are.
import { Counter, type Registry } from "prom-client";
import type { RequestObserver, RequestOutcome } from "../http/request-outcome.js";

/** The intake's operations: one per kind of sender. */
const INTAKE_SERVICE = "svc.api.webhooks.v1.IncomingWebhookService.";

export class WebhookMetrics implements RequestObserver {
  private readonly deliveries: Counter<"auth_method" | "outcome">;
  private readonly refusals: Counter<"auth_method" | "reason">;

  constructor(registry: Registry) {
    const registers = [registry];
    this.deliveries = new Counter({ name: "tenant_api_webhook_deliveries_total", help: "Webhook deliveries answered, by authentication method (hmac, jwt, standardWebhooks, github, stripe, unknown) and outcome (accepted, duplicate, refused).", labelNames: ["auth_method", "outcome"], registers });
    this.refusals = new Counter({ name: "tenant_api_webhook_refusals_total", help: "Webhook deliveries refused, by authentication method and the contract's ErrorReason.", labelNames: ["auth_method", "reason"], registers });
  }

  answered(o: RequestOutcome): void {
    if (!o.operationId?.startsWith(INTAKE_SERVICE)) return;
    const auth_method = o.webhookAuth ?? "unknown";
    const outcome = o.status === 200 ? "accepted" : o.reason === "DUPLICATE_EVENT" ? "duplicate" : "refused";
    this.deliveries.inc({ auth_method, outcome });
    if (outcome === "refused" && o.reason !== undefined) this.refusals.inc({ auth_method, reason: o.reason });
  }
}
