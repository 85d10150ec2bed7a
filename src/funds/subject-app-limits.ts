// Subject-app limit rows: the controls capping what one app may take from one subject's fund,
// served to SubjectAppLimitService (any subject, for administrators) and MyFundLimitsService (the
// caller's own; the `Mine` variants differ only in what their errors name). Every mutation is one
// read-modify-write (./controls-write.ts) of a pure mutation of ./controls.ts. A row always holds
// at least one control: clearing its last one removes it (deleted_at set), and a later write
// creates a new row.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import type { OperationId } from "../../generated/server.js";
import { auditRow, recordAudit } from "../audit/audit-record.js";
import { limitTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { invalidField, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Users } from "../identity/users.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { SubjectAppLimitsTable } from "../storage/schema.js";
import { writeTransaction, type Db, type WriteOptions } from "../storage/transactions.js";
import {
  amountCurrency,
  isEmpty,
  parseExtension,
  parseLimitAndPeriod,
  parseMaxAuthorizations,
  parsePerAuthorization,
  requireFutureExpiry,
  sameControls,
  withExtension,
  withLimit,
  withoutExtension,
  withoutLimit,
  withoutSuspension,
  withSuspension,
} from "./controls.js";
import { changeControlsRow, type ControlsRowAccess } from "./controls-write.js";
import { withFundEvents, type FundEventBatch, type FundEventFacts, type FundEventRecorder, type FundEventType } from "./fund-events.js";
import type { FundPolicies } from "./fund-policy.js";
import { parseReason } from "./guards.js";
import type { LimitContext } from "./spends/spend-limit.js";
import type { SpendControls } from "./types.js";
import { controlsView } from "./fund-views.js";

export type SubjectAppLimit = components["schemas"]["SubjectAppLimit"];

export interface SearchFilters {
  userIds?: readonly string[] | undefined;
  appIds?: readonly string[] | undefined;
  suspended?: boolean | undefined;
}

/** Whose row an operation addresses, and how its errors name it. */
interface Target {
  userId: string;
  appId: string;
  /** The caller's own row (MyFundLimitsService): errors never name the user. */
  mine: boolean;
}

/** A mutation of a row's controls; `currencyCode` is the fund currency for money in the request. */
type Change = (controls: SpendControls | null, currencyCode: string, now: number) => SpendControls;

const controlsOf = (row: SubjectAppLimitsTable): SpendControls => JSON.parse(row.controls) as SpendControls;

/** The fund events a change of a row may cause. */
const ROW_EVENTS: readonly FundEventType[] = ["FUND_EVENT_TYPE_LIMIT_SUSPENDED", "FUND_EVENT_TYPE_LIMIT_UNSUSPENDED", "FUND_EVENT_TYPE_LIMIT_CHANGED"];

/** The fund events of a row's controls going from `before` to `after`: suspended, unsuspended, its base limit or period changed. */
function rowEventTypes(before: SpendControls | null, after: SpendControls | null): FundEventType[] {
  const types: FundEventType[] = [];
  if (!before?.suspension && after?.suspension) types.push("FUND_EVENT_TYPE_LIMIT_SUSPENDED");
  if (before?.suspension && !after?.suspension) types.push("FUND_EVENT_TYPE_LIMIT_UNSUSPENDED");
  if (JSON.stringify([before?.limit ?? null, before?.period ?? null]) !== JSON.stringify([after?.limit ?? null, after?.period ?? null])) types.push("FUND_EVENT_TYPE_LIMIT_CHANGED");
  return types;
}

export class SubjectAppLimits {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly users: Users,
    private readonly policy: FundPolicies,
    private readonly pageTokens: PageTokens,
    private readonly tenantId: string,
    private readonly events?: FundEventRecorder,
  ) {}

  private view(row: SubjectAppLimitsTable): SubjectAppLimit {
    return {
      appId: row.app_id,
      userId: row.user_id,
      tenantId: this.tenantId,
      controls: controlsView(controlsOf(row)),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      deletedAt: row.deleted_at,
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  /** The live row, or 404 (USER_NOT_FOUND for an unknown user, else ROW_NOT_FOUND). */
  async get(userId: string, appId: string): Promise<SubjectAppLimit> {
    return this.view(await this.requireRow({ userId, appId, mine: false }));
  }

  async getMine(userId: string, appId: string): Promise<SubjectAppLimit> {
    return this.view(await this.requireRow({ userId, appId, mine: true }));
  }

  /** 404 USER_NOT_FOUND unless the user exists. Users are never removed, so a check before a transaction holds in it. */
  async requireUser(userId: string, db?: Db): Promise<void> {
    if (!(await this.users.exists(userId, db))) throw userNotFound(userId);
  }

  /**
   * Live rows matching every filter, ordered by (user_id, app_id), each page a seek from the token's
   * position. Filtered by app ids alone, one bounded seek per app (index by app) is merged, since
   * their union is in no index's order: a page costs at most `apps * (size + 1)` rows, at any depth.
   */
  async search(filters: SearchFilters, size: number | undefined, token: string | undefined): Promise<Page<SubjectAppLimit>> {
    const userIds = [...new Set(filters.userIds ?? [])].sort();
    const appIds = [...new Set(filters.appIds ?? [])].sort();
    const suspended = filters.suspended;
    // The token is bound to the filters as normalized here: the same set of ids in another order is the same list.
    const scope = `subject-app-limits.search:${JSON.stringify({ userIds, appIds, suspended: suspended ?? null })}`;
    const after = this.pageTokens.decode(scope, token, "body.pageToken", 2);
    const limit = pageSize(size);
    const db = this.storage.db;

    const page = (appIdsHere: readonly string[]) => {
      let query = db.selectFrom("subject_app_limits").selectAll().where("deleted_at", "is", null);
      if (userIds.length > 0) query = query.where("user_id", "in", userIds);
      if (appIdsHere.length === 1) query = query.where("app_id", "=", appIdsHere[0]!);
      else if (appIdsHere.length > 1) query = query.where("app_id", "in", appIdsHere);
      if (suspended !== undefined) query = query.where("suspended", "=", suspended ? 1 : 0);
      if (after) {
        const [userId, appId] = after.map(String) as [string, string];
        query = query.where((eb) => eb(eb.refTuple("user_id", "app_id"), ">", eb.tuple(userId, appId)));
      }
      return query.orderBy("user_id").orderBy("app_id").limit(limit + 1);
    };

    let rows: SubjectAppLimitsTable[];
    if (userIds.length === 0 && appIds.length > 1) {
      const [first, ...rest] = appIds.map((appId) => db.selectFrom(page([appId]).as("one_app")).selectAll());
      const union = rest.reduce((all, next) => all.unionAll(next), first!);
      rows = await db.selectFrom(union.as("apps")).selectAll().orderBy("user_id").orderBy("app_id").limit(limit + 1).execute();
    } else {
      rows = await page(appIds).execute();
    }
    return this.pageTokens.page(scope, rows, limit, (r) => [r.user_id, r.app_id], (r) => this.view(r));
  }

  /** The caller's live rows, ordered by app_id. The token is bound to the caller. */
  async listMine(userId: string, size: number | undefined, token: string | undefined): Promise<Page<SubjectAppLimit>> {
    const scope = `my-fund-limits.list:${userId}`;
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let query = this.storage.db.selectFrom("subject_app_limits").selectAll().where("deleted_at", "is", null).where("user_id", "=", userId);
    if (after) query = query.where("app_id", ">", String(after[0]));
    const rows = await query.orderBy("app_id").limit(limit + 1).execute();
    return this.pageTokens.page(scope, rows, limit, (r) => [r.app_id], (r) => this.view(r));
  }

  // ---- writes ------------------------------------------------------------------------------

  /** Sets the base limit and its period (creating the row); suspension and extension stay. */
  async setLimit(userId: string, appId: string, body: { limit?: unknown; period?: unknown; perAuthorization?: unknown; maxAuthorizations?: unknown }, origin?: Origin): Promise<SubjectAppLimit> {
    return this.setLimitIn({ userId, appId, mine: false }, "row", body, origin);
  }

  /** The caller's own SetLimit: only the amount arm. */
  async setMyLimit(userId: string, appId: string, body: { limit?: unknown; period?: unknown; perAuthorization?: unknown; maxAuthorizations?: unknown }, origin?: Origin): Promise<SubjectAppLimit> {
    return this.setLimitIn({ userId, appId, mine: true }, "my-limit", body, origin);
  }

  private async setLimitIn(target: Target, context: LimitContext, body: { limit?: unknown; period?: unknown; perAuthorization?: unknown; maxAuthorizations?: unknown }, origin: Origin | undefined): Promise<SubjectAppLimit> {
    const operation = target.mine ? "svc.api.funds.v1.MyFundLimitsService.SetLimit" : "svc.api.funds.v1.SubjectAppLimitService.SetLimit";
    const row = await this.mutate(target, operation, true, (controls, currencyCode) => {
      const { limit, period } = parseLimitAndPeriod(body.limit, body.period, context, currencyCode, "body");
      if (!limit) throw invalidField("body.limit", "is required (to remove the limit, clear it)", "LIMIT_MISSING");
      // The caller's own SetLimit carries no caps: those an administrator set stay.
      const caps = target.mine
        ? undefined
        : { perAuthorization: parsePerAuthorization(body.perAuthorization, currencyCode, "body.perAuthorization"), maxAuthorizations: parseMaxAuthorizations(body.maxAuthorizations, "body.maxAuthorizations") };
      return withLimit(controls, limit, period, caps);
    }, { origin });
    return row as SubjectAppLimit;
  }

  // Suspend, Unsuspend and SetExtension also run as automation steps: `writing.outer` joins the
  // step's transaction so the effect and the step's result commit together.

  /** Suspends the row (creating it); the limit underneath stays, to be restored by unsuspend. */
  async suspend(userId: string, appId: string, body: { reason?: unknown }, writing?: WriteOptions): Promise<SubjectAppLimit> {
    const row = await this.mutate({ userId, appId, mine: false }, "svc.api.funds.v1.SubjectAppLimitService.Suspend", true, (controls, _currency, now) =>
        withSuspension(controls, parseReason(body.reason, "body.reason"), now),
      writing,
    );
    return row as SubjectAppLimit;
  }

  /** Lifts the suspension; null when it was the row's last control (the row is removed). */
  async unsuspend(userId: string, appId: string, writing?: WriteOptions): Promise<SubjectAppLimit | null> {
    return this.mutate({ userId, appId, mine: false }, "svc.api.funds.v1.SubjectAppLimitService.Unsuspend", false, (controls) => withoutSuspension(controls), writing);
  }

  /** Grants a temporary total until `expiresAt` (future), replacing any extension (creating the row). */
  async setExtension(userId: string, appId: string, body: { limit?: unknown; expiresAt?: unknown; reason?: unknown }, writing?: WriteOptions): Promise<SubjectAppLimit> {
    const row = await this.mutate({ userId, appId, mine: false }, "svc.api.funds.v1.SubjectAppLimitService.SetExtension", true, (controls, currencyCode, now) =>
        withExtension(controls, requireFutureExpiry(parseExtension(body, currencyCode, "body"), now, "body.expiresAt")),
      writing,
    );
    return row as SubjectAppLimit;
  }

  /** Removes the extension, running or lapsed; null when it was the row's last control. */
  async clearExtension(userId: string, appId: string, origin?: Origin): Promise<SubjectAppLimit | null> {
    return this.mutate({ userId, appId, mine: false }, "svc.api.funds.v1.SubjectAppLimitService.ClearExtension", false, (controls) => withoutExtension(controls), { origin });
  }

  /** The caller's own ClearLimit: drops limit and period; null when the limit was the last control. */
  async clearMyLimit(userId: string, appId: string, origin?: Origin): Promise<SubjectAppLimit | null> {
    return this.mutate({ userId, appId, mine: true }, "svc.api.funds.v1.MyFundLimitsService.ClearLimit", false, (controls) => withoutLimit(controls), { origin });
  }

  /** Removes the row with all its controls. */
  async delete(userId: string, appId: string, origin?: Origin): Promise<void> {
    const target: Target = { userId, appId, mine: false };
    await this.requireUser(userId);
    await withFundEvents(this.events, ROW_EVENTS, (events) => writeTransaction(this.storage, { exclusive: [lockKey(target)] }, async (db) => {
      const row = await this.liveRow(db, userId, appId);
      if (!row) throw rowNotFound(target);
      const now = this.clock.now();
      const removed = { ...row, deleted_at: new Date(now).toISOString() };
      await db.updateTable("subject_app_limits").set({ deleted_at: removed.deleted_at }).where("id", "=", row.id).execute();
      await recordAudit(db, origin, now, { operationId: "svc.api.funds.v1.SubjectAppLimitService.Delete", target: limitTarget(userId, appId), before: this.view(row), after: null });
      await this.recordRowEvents(events, db, row, removed);
    }, { origin }));
  }

  /**
   * The read-modify-write behind every change of one row. `create`: a missing row is created
   * (from no controls), else it is 404. Controls left empty remove the row (answer null); controls
   * left as they were leave the row untouched (updatedAt too).
   */
  private async mutate(target: Target, operationId: OperationId, create: boolean, change: Change, writing?: WriteOptions): Promise<SubjectAppLimit | null> {
    const result = await withFundEvents(this.events, ROW_EVENTS, (events) => changeControlsRow(this.storage, this.access(target, events), (row, currencyCode) => {
      if (!row && !create) throw rowNotFound(target);
      const now = this.clock.now();
      const stamp = new Date(now).toISOString();
      const before = row ? controlsOf(row) : null;
      const after = change(before, currencyCode, now);

      if (row && sameControls(before, after)) return { answer: row };
      const columns = { controls: JSON.stringify(after), suspended: after.suspension ? 1 : 0, amount_currency: amountCurrency(after), updated_at: stamp };
      const audit = (written: SubjectAppLimitsTable | null) =>
        auditRow(writing?.origin, now, { operationId, target: limitTarget(target.userId, target.appId), before: row ? this.view(row) : null, after: written && this.view(written) });
      if (isEmpty(after)) return row ? { answer: null, write: { ...row, ...columns, deleted_at: stamp }, audit: audit(null) } : { answer: null };
      const written: SubjectAppLimitsTable = row
        ? { ...row, ...columns }
        : { id: newId(), user_id: target.userId, app_id: target.appId, ...columns, created_at: stamp, deleted_at: null };
      return { answer: written, write: written, audit: audit(written) };
    }, writing), writing?.outer);
    return result ? this.view(result) : null;
  }

  /** Records the fund events of the row's change from `seen` (the live row before; none) to `written`. */
  private async recordRowEvents(events: FundEventBatch | undefined, db: Db, seen: SubjectAppLimitsTable | undefined, written: SubjectAppLimitsTable): Promise<void> {
    if (!events) return;
    const before = seen ? controlsOf(seen) : null;
    const after = written.deleted_at === null ? controlsOf(written) : null;
    const facts: FundEventFacts[] = rowEventTypes(before, after).map((type) => ({
      type: type as FundEventFacts["type"],
      occurredAt: written.deleted_at ?? written.updated_at,
      userId: written.user_id,
      appId: written.app_id,
      limitChange: { before: before && controlsView(before), after: this.view(written) },
    }));
    await events.record(db, facts);
  }

  /** How ./controls-write.ts reads and writes the target's row: the user's check (404) comes with the read. */
  private access(target: Target, events?: FundEventBatch): ControlsRowAccess<SubjectAppLimitsTable> {
    const values = { userId: target.userId, appId: target.appId, tenantId: this.policy.tenantId };
    return {
      ...(events ? { written: (db: Db, seen: SubjectAppLimitsTable | undefined, row: SubjectAppLimitsTable) => this.recordRowEvents(events, db, seen, row) } : {}),
      table: "subject_app_limits",
      lock: lockKey(target),
      tenantId: values.tenantId,
      read: async (db) => {
        const found = (await userRowAndCurrencyStatement.execute(db, values)).rows[0];
        if (!found) throw userNotFound(target.userId);
        const { fund_currency: currency, ...row } = found;
        return { row: row.id === null ? undefined : (row as SubjectAppLimitsTable), currency };
      },
    };
  }

  private async liveRow(db: Db, userId: string, appId: string): Promise<SubjectAppLimitsTable | undefined> {
    return db
      .selectFrom("subject_app_limits")
      .selectAll()
      .where("user_id", "=", userId)
      .where("app_id", "=", appId)
      .where("deleted_at", "is", null)
      .executeTakeFirst();
  }

  private async requireRow(target: Target): Promise<SubjectAppLimitsTable> {
    const { rows } = await userAndRowStatement.execute(this.storage.db, target);
    const row = rows[0];
    if (!row) throw userNotFound(target.userId);
    if (row.id === null) throw rowNotFound(target);
    return row as SubjectAppLimitsTable;
  }
}

/**
 * The user (no row: no such user) and its live row for the app (columns null: none) in one
 * statement compiled once: a read's two checks in one query (../storage/prepared.ts).
 */
const userAndRowStatement = prepared((db, v: { userId: string; appId: string }) =>
  db
    .selectFrom("users")
    .leftJoin("subject_app_limits", (join) =>
      join.onRef("subject_app_limits.user_id", "=", "users.id").on("subject_app_limits.app_id", "=", v.appId).on("subject_app_limits.deleted_at", "is", null),
    )
    .selectAll("subject_app_limits")
    .where("users.id", "=", v.userId),
);

/** The user (no row: no such user), its live row for the app (columns null: none) and the fund currency, in one statement. */
const userRowAndCurrencyStatement = prepared((db, v: { userId: string; appId: string; tenantId: string }) =>
  db
    .selectFrom("users")
    .innerJoin("fund_policy", (join) => join.on("fund_policy.tenant_id", "=", v.tenantId))
    .leftJoin("subject_app_limits", (join) =>
      join.onRef("subject_app_limits.user_id", "=", "users.id").on("subject_app_limits.app_id", "=", v.appId).on("subject_app_limits.deleted_at", "is", null),
    )
    .selectAll("subject_app_limits")
    .select("fund_policy.currency_code as fund_currency")
    .where("users.id", "=", v.userId),
);

const userNotFound = (userId: string) => notFound("USER_NOT_FOUND", "no user with this id", { metadata: { userId } });

const lockKey = (t: Target) => `subject_app_limits:${t.userId}:${t.appId}`;

function rowNotFound(target: Target) {
  return target.mine
    ? notFound("ROW_NOT_FOUND", "you have no limit row for this app", { metadata: { appId: target.appId } })
    : notFound("ROW_NOT_FOUND", "the user has no limit row for this app", { metadata: { userId: target.userId, appId: target.appId } });
}
