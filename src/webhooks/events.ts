// The record of accepted webhook events: the idempotency key of the intake (one event id per
// listener, settled by the table's primary key) and the delivery log of each automation.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { WebhookEventsTable } from "../storage/schema.js";
import { prepared } from "../storage/prepared.js";
import type { Db } from "../storage/transactions.js";

export type WebhookEvent = components["schemas"]["WebhookEvent"];

/** Event records are kept for 7 days (seed section 6 and 8). */
export const EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

export const toWebhookEvent = (row: WebhookEventsTable): WebhookEvent => ({
  eventId: row.event_id,
  listenerId: row.listener_id,
  automationId: row.automation_id,
  receivedAt: row.received_at,
  outcome: row.outcome,
  notRunReason: row.not_run_reason,
  automationExecutionId: row.execution_id,
});

/** Inserted, or replacing a record past retention (received at or before `retained`); a live record is left alone. */
const claimStatement = prepared((db, v: WebhookEventsTable & { retained: string }) =>
  db
    .insertInto("webhook_events")
    .values({
      listener_id: v.listener_id,
      event_id: v.event_id,
      automation_id: v.automation_id,
      received_at: v.received_at,
      outcome: v.outcome,
      not_run_reason: v.not_run_reason,
      execution_id: v.execution_id,
    })
    .onConflict((oc) =>
      oc
        .columns(["listener_id", "event_id"])
        .doUpdateSet((eb) => ({
          automation_id: eb.ref("excluded.automation_id"),
          received_at: eb.ref("excluded.received_at"),
          outcome: eb.ref("excluded.outcome"),
          not_run_reason: eb.ref("excluded.not_run_reason"),
          execution_id: eb.ref("excluded.execution_id"),
        }))
        .where("webhook_events.received_at", "<=", v.retained),
    ),
);

const seenStatement = prepared((db, v: { listenerId: string; eventId: string; since: string }) =>
  db.selectFrom("webhook_events").select("event_id").where("listener_id", "=", v.listenerId).where("event_id", "=", v.eventId).where("received_at", ">", v.since),
);

export class WebhookEvents {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly pageTokens: PageTokens,
  ) {}

  private retainedSince(): string {
    return new Date(this.clock.now() - EVENT_RETENTION_MS).toISOString();
  }

  /**
   * Claims `eventId` on the listener inside the caller's transaction: false when it was already
   * seen within retention. A record past retention that the sweep has not removed yet no longer
   * counts, so the same id is accepted again.
   */
  async claim(db: Db, row: WebhookEventsTable): Promise<boolean> {
    const claimed = await claimStatement.execute(db, { ...row, retained: this.retainedSince() });
    return Number(claimed.numAffectedRows ?? 0) === 1;
  }

  /** Whether `eventId` was seen on the listener within retention: a read that spares duplicates a write. */
  async seen(listenerId: string, eventId: string): Promise<boolean> {
    const { rows } = await seenStatement.execute(this.storage.db, { listenerId, eventId, since: this.retainedSince() });
    return rows.length > 0;
  }

  /** Removes records past retention; safe to run on every instance at once. */
  async sweep(): Promise<number> {
    const result = await this.storage.db.deleteFrom("webhook_events").where("received_at", "<=", this.retainedSince()).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The delivery log of one automation, newest first. */
  async list(automationId: string, size: number | undefined, token: string | undefined): Promise<Page<WebhookEvent>> {
    const scope = `webhook-events:${automationId}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 2);
    const limit = pageSize(size);
    let query = this.storage.db
      .selectFrom("webhook_events")
      .selectAll()
      .where("automation_id", "=", automationId)
      .where("received_at", ">", this.retainedSince())
      .orderBy("received_at", "desc")
      .orderBy("event_id", "desc")
      .limit(limit + 1);
    if (after) {
      const [at, id] = after.map(String) as [string, string];
      query = query.where((eb) => eb.or([eb("received_at", "<", at), eb.and([eb("received_at", "=", at), eb("event_id", "<", id)])]));
    }
    return this.pageTokens.page(scope, await query.execute(), limit, (r) => [r.received_at, r.event_id], toWebhookEvent);
  }
}
