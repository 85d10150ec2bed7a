// The record of accepted webhook events: the idempotency key of the intake (one event id per
// listener, settled by the table's primary key) and the delivery log of each automation.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import type { Origin } from "../core/origin.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import { recordEvent, seenBeforeRecord } from "./event-record.js";
import type { AutomationExecutionsTable, WebhookEventsTable } from "../storage/schema.js";

export type WebhookEvent = components["schemas"]["WebhookEvent"];

/** Event records are kept for 7 days (seed section 6 and 8). */
export const EVENT_RETENTION_MS = 7 * 24 * 3600 * 1000;

export const toWebhookEvent = (row: WebhookEventsTable): WebhookEvent => ({
  eventId: row.event_id,
  eventType: row.event_type ?? null,
  listenerId: row.listener_id,
  automationId: row.automation_id,
  receivedAt: row.received_at,
  outcome: row.outcome,
  notRunReason: row.not_run_reason,
  automationExecutionId: row.execution_id,
});

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
   * Records an accepted event and the execution it starts, atomically: false, and nothing written,
   * when the event id was already seen on its listener within retention. A record past retention
   * that the sweep has not removed yet no longer counts, so the same id is accepted again.
   */
  async record(event: WebhookEventsTable, execution?: AutomationExecutionsTable, origin?: Origin): Promise<boolean> {
    return recordEvent(this.storage, event, this.retainedSince(), execution, origin);
  }

  /**
   * Whether `eventId` is known, before authentication has passed and the event is recorded: answers
   * most duplicates without a write where that spares one (see event-record.ts).
   */
  async seen(listenerId: string, eventId: string): Promise<boolean> {
    return seenBeforeRecord(this.storage, listenerId, eventId, this.retainedSince());
  }

  /**
   * The record of `eventId` in the delivery log of `automationId`, within retention (the newest, should
   * the automation have had it on two listeners); undefined when there is none. A seek in the index by
   * automation: its entries of the last 7 days are filtered there, and only the match read from the table.
   */
  async find(automationId: string, eventId: string): Promise<WebhookEventsTable | undefined> {
    return this.storage.db
      .selectFrom("webhook_events")
      .selectAll()
      .where("automation_id", "=", automationId)
      .where("received_at", ">", this.retainedSince())
      .where("event_id", "=", eventId)
      .orderBy("received_at", "desc")
      .limit(1)
      .executeTakeFirst();
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
