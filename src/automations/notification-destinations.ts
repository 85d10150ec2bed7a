// The health of the destinations `notify` steps post to (host and port), shared by every instance
// through the database. Consecutive failed attempts open a destination's circuit: no attempt is
// made to it until a cool-down passes, then one trial, whose failure opens it again. A destination
// failing for the configured period is disabled, its notifications failing at once, until a super
// admin enables it again; both are audited. Only a destination that failed has a row: an attempt
// that succeeds to a healthy one writes nothing. docs/automations.md, "Destination health".
import { createHash } from "node:crypto";
import { sql } from "kysely";
import type { components } from "../../generated/api.js";
import type { KnownNotificationDestinationState } from "../../generated/enums.js";
import { recordAudit } from "../audit/audit-record.js";
import { destinationTarget } from "../audit/change.js";
import { BoundedMap } from "../core/bounded-map.js";
import type { Clock } from "../core/clock.js";
import { notFound } from "../core/errors.js";
import type { Origin } from "../core/origin.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { NotificationDestinationsTable } from "../storage/schema.js";
import { writeStatement, writeTransaction, type BeforeCommit, type Db } from "../storage/transactions.js";

export type NotificationDestination = components["schemas"]["NotificationDestination"];

export interface DestinationHealthSettings {
  /** Attempts failed in a row that open the circuit (NOTIFY_CIRCUIT_FAILURES). */
  circuitFailures: number;
  /** How long an open circuit stays open (NOTIFY_CIRCUIT_COOLDOWN_SECONDS). */
  cooldownMs: number;
  /** How long a destination fails before it is disabled (NOTIFY_DISABLE_AFTER_SECONDS); null: never. */
  disableAfterMs: number | null;
}

/** Whether an attempt to a destination may be made now. */
export type Gate = { kind: "send" } | { kind: "wait"; until: number } | { kind: "disabled"; reason: string };

/**
 * How long a destination's row as read here is trusted: the circuit another instance opened is seen
 * within this; a healthy destination costs a read per this much time, not per attempt.
 */
const SEEN_TTL_MS = 1_000;
const SEEN_ENTRIES = 10_000;

const OPERATION = {
  enable: "svc.api.automations.v1.NotificationDestinationService.Enable",
  disable: "svc.api.automations.v1.NotificationDestinationService.Disable",
} as const;

/** A destination's id: stable, path-safe, whatever its host (an IPv6 literal's brackets and colons included). */
export const destinationId = (destination: string): string => `dst_${createHash("sha256").update(destination).digest("hex").slice(0, 24)}`;

export const destinationNotFound = (id: string) => notFound("NOTIFICATION_DESTINATION_NOT_FOUND", "no notification destination with this id (only a destination that failed has one)", { metadata: { destinationId: id } });

const iso = (ms: number) => new Date(ms).toISOString();

export function stateOf(row: NotificationDestinationsTable, now: number): KnownNotificationDestinationState {
  if (row.disabled_at !== null) return "NOTIFICATION_DESTINATION_STATE_DISABLED";
  if (row.open_until !== null && Date.parse(row.open_until) > now) return "NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN";
  return row.consecutive_failures > 0 ? "NOTIFICATION_DESTINATION_STATE_FAILING" : "NOTIFICATION_DESTINATION_STATE_HEALTHY";
}

export class NotificationDestinations {
  private readonly seen = new BoundedMap<string, { row: NotificationDestinationsTable | undefined; at: number }>({ entries: SEEN_ENTRIES });

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly settings: DestinationHealthSettings,
    private readonly pageTokens: PageTokens,
  ) {}

  private view(row: NotificationDestinationsTable): NotificationDestination {
    const now = this.clock.now();
    return {
      id: row.id,
      destination: row.destination,
      state: stateOf(row, now),
      consecutiveFailures: row.consecutive_failures,
      failingSince: row.failing_since,
      circuitOpenUntil: row.open_until !== null && Date.parse(row.open_until) > now ? row.open_until : null,
      disabledAt: row.disabled_at,
      lastError: row.last_error,
      updatedAt: row.updated_at,
    };
  }

  private async read(destination: string, fresh = false): Promise<NotificationDestinationsTable | undefined> {
    const now = performance.now();
    const cached = this.seen.get(destination);
    if (!fresh && cached && now - cached.at < SEEN_TTL_MS) return cached.row;
    const row = await this.storage.db.selectFrom("notification_destinations").selectAll().where("id", "=", destinationId(destination)).executeTakeFirst();
    return this.saw(destination, row);
  }

  private saw(destination: string, row: NotificationDestinationsTable | undefined): NotificationDestinationsTable | undefined {
    this.seen.set(destination, { row, at: performance.now() });
    return row;
  }

  /**
   * Whether to attempt `destination` now. Once an open circuit's cool-down has passed, one attempt
   * across instances is the trial: it takes the circuit for `trialMs` (an attempt's timeout), the
   * others wait for its outcome.
   */
  async gate(destination: string, trialMs: number): Promise<Gate> {
    const row = await this.read(destination);
    if (!row) return { kind: "send" };
    if (row.disabled_at !== null) {
      return { kind: "disabled", reason: `its destination ${destination} is disabled (since ${row.disabled_at}); a super admin enables it again with NotificationDestinationService.Enable` };
    }
    const now = this.clock.now();
    if (row.open_until !== null && Date.parse(row.open_until) > now) return { kind: "wait", until: Date.parse(row.open_until) };
    if (row.consecutive_failures < this.settings.circuitFailures) return { kind: "send" };
    const trialUntil = iso(now + trialMs);
    // Writes go through the storage's write path (on SQLite, its one writer), never beside it.
    const taken = await writeStatement(this.storage, (db) =>
      db
        .updateTable("notification_destinations")
        .set({ open_until: trialUntil })
        .where("id", "=", row.id)
        .where("disabled_at", "is", null)
        .where((eb) => (row.open_until === null ? eb("open_until", "is", null) : eb("open_until", "=", row.open_until)))
        .executeTakeFirst(),
    );
    if (taken.numUpdatedRows > 0n) {
      this.saw(destination, { ...row, open_until: trialUntil });
      return { kind: "send" };
    }
    // Another instance took the trial, or changed the row: as it is now.
    const now$ = await this.read(destination, true);
    if (now$?.disabled_at) return this.gate(destination, trialMs);
    return now$?.open_until && Date.parse(now$.open_until) > now ? { kind: "wait", until: Date.parse(now$.open_until) } : { kind: "send" };
  }

  /** An attempt to `destination` got an answer: a failing destination is healthy again, its circuit closed. */
  async answered(destination: string): Promise<void> {
    const row = await this.read(destination);
    if (!row || (row.consecutive_failures === 0 && row.open_until === null)) return;
    const updated = { consecutive_failures: 0, failing_since: null, open_until: null, updated_at: iso(this.clock.now()) };
    await writeStatement(this.storage, (db) => db.updateTable("notification_destinations").set(updated).where("id", "=", row.id).where("disabled_at", "is", null).execute());
    this.saw(destination, { ...row, ...updated });
  }

  /**
   * An attempt to `destination` got no answer or one that may pass (`error`): one failure more, the
   * circuit opened at the threshold, the destination disabled once it has failed for the period
   * (audited as the run's `origin`). Answers whether it is disabled now.
   */
  async failed(destination: string, error: string, origin: Origin | undefined): Promise<boolean> {
    const now = this.clock.now();
    const { circuitFailures, cooldownMs, disableAfterMs } = this.settings;
    const id = destinationId(destination);
    const row = await writeTransaction(this.storage, { exclusive: [`notification_destinations:${id}`] }, async (db) => {
      const counted = await db
        .insertInto("notification_destinations")
        .values({ id, destination, consecutive_failures: 1, failing_since: iso(now), open_until: circuitFailures <= 1 ? iso(now + cooldownMs) : null, disabled_at: null, last_error: error, updated_at: iso(now) })
        .onConflict((oc) =>
          oc.column("id").doUpdateSet((eb) => ({
            consecutive_failures: eb("notification_destinations.consecutive_failures", "+", 1),
            failing_since: eb.fn.coalesce("notification_destinations.failing_since", eb.val(iso(now))),
            open_until: eb
              .case()
              .when(eb("notification_destinations.consecutive_failures", ">=", circuitFailures - 1))
              .then(iso(now + cooldownMs))
              .else(eb.ref("notification_destinations.open_until"))
              .end(),
            last_error: error,
            updated_at: iso(now),
          })),
        )
        .returningAll()
        .executeTakeFirstOrThrow();
      const since = counted.failing_since === null ? now : Date.parse(counted.failing_since);
      if (counted.disabled_at !== null || disableAfterMs === null || now - since < disableAfterMs) return counted;
      return this.setDisabled(db, counted, iso(now), origin);
    }, { origin });
    this.saw(destination, row);
    return row.disabled_at !== null;
  }

  private async setDisabled(db: Db, row: NotificationDestinationsTable, at: string | null, origin: Origin | undefined): Promise<NotificationDestinationsTable> {
    const changed = at === null ? { disabled_at: null, consecutive_failures: 0, failing_since: null, open_until: null, updated_at: iso(this.clock.now()) } : { disabled_at: at, updated_at: at };
    const after = { ...row, ...changed };
    await db.updateTable("notification_destinations").set(changed).where("id", "=", row.id).execute();
    const operationId = at === null ? OPERATION.enable : OPERATION.disable;
    await recordAudit(db, origin, this.clock.now(), { operationId, target: destinationTarget(row.id), before: this.view(row), after: this.view(after) });
    return after;
  }

  async get(id: string): Promise<NotificationDestination> {
    const row = await this.storage.db.selectFrom("notification_destinations").selectAll().where("id", "=", id).executeTakeFirst();
    if (!row) throw destinationNotFound(id);
    return this.view(row);
  }

  /** By id. */
  async list(size: number | undefined, token: string | undefined): Promise<Page<NotificationDestination>> {
    const scope = "notification-destinations";
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let query = this.storage.db.selectFrom("notification_destinations").selectAll().orderBy("id").limit(limit + 1);
    if (after) query = query.where("id", ">", String(after[0]));
    const rows = await query.execute();
    return this.pageTokens.page(scope, rows, limit, (r) => [r.id], (r) => this.view(r));
  }

  /** Enables (`disabled` false: its failures and circuit cleared) or disables a destination, audited. */
  async set(id: string, disabled: boolean, beforeCommit?: BeforeCommit<NotificationDestination>, origin?: Origin): Promise<NotificationDestination> {
    const row = await writeTransaction(this.storage, { exclusive: [`notification_destinations:${id}`] }, async (db) => {
      const found = await db.selectFrom("notification_destinations").selectAll().where("id", "=", id).executeTakeFirst();
      if (!found) throw destinationNotFound(id);
      const unchanged = disabled ? found.disabled_at !== null : found.disabled_at === null && found.consecutive_failures === 0 && found.open_until === null;
      const result = unchanged ? found : await this.setDisabled(db, found, disabled ? iso(this.clock.now()) : null, origin);
      await beforeCommit?.(db, this.view(result));
      return result;
    }, { origin });
    this.seen.delete(row.destination);
    return this.view(row);
  }

  /** How many destinations are in each state now (the metrics' gauge), counted in the database. */
  async counts(): Promise<Array<{ state: string; count: number }>> {
    const now = iso(this.clock.now());
    const state = sql<string>`case when disabled_at is not null then ${sql.lit("NOTIFICATION_DESTINATION_STATE_DISABLED")}
      when open_until > ${now} then ${sql.lit("NOTIFICATION_DESTINATION_STATE_CIRCUIT_OPEN")}
      when consecutive_failures > 0 then ${sql.lit("NOTIFICATION_DESTINATION_STATE_FAILING")}
      else ${sql.lit("NOTIFICATION_DESTINATION_STATE_HEALTHY")} end`;
    // Grouped by the derived column: PostgreSQL takes a repeated expression with its own parameter for another.
    const states = this.storage.db.selectFrom("notification_destinations").select(state.as("state")).as("states");
    const rows = await this.storage.db
      .selectFrom(states)
      .select(["states.state", (eb) => eb.fn.countAll<number | string>().as("n")])
      .groupBy("states.state")
      .execute();
    return rows.map((r) => ({ state: r.state, count: Number(r.n) }));
  }
}
