// Spend decisions (SpendService.Authorize) by outcome and the contract's SpendDeclineCause.
import { Counter, type Registry } from "prom-client";
import type { DeclineCause } from "../funds/spends/spend-decision.js";
import type { SpendObserver } from "../funds/spends/spend-observer.js";

export class SpendMetrics implements SpendObserver {
  private readonly decisions: Counter<"outcome" | "cause">;

  constructor(registry: Registry) {
    this.decisions = new Counter({ name: "tenant_api_spend_decisions_total", help: "Spend authorizations decided, by outcome (approved, declined) and decline cause (SPEND_DECLINE_CAUSE_UNSPECIFIED when approved).", labelNames: ["outcome", "cause"], registers: [registry] });
  }

  decided(approved: boolean, cause: DeclineCause): void {
    this.decisions.inc({ outcome: approved ? "approved" : "declined", cause });
  }
}
