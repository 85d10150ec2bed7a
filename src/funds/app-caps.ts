// App caps: the controls of one app for every subject, the middle layer of resolution. Set replaces
// a cap's controls as a whole; Delete removes the cap (deleted_at set), and a later Set creates a new one.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { auditRow, recordAudit } from "../audit/audit-record.js";
import { capTarget } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { invalidField, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { AppCapsTable } from "../storage/schema.js";
import { writeTransaction, type Db } from "../storage/transactions.js";
import { amountCurrency, isEmpty, replaceControls, sameControls } from "./controls.js";
import { changeControlsRow, type ControlsRowAccess } from "./controls-write.js";
import type { FundPolicies } from "./fund-policy.js";
import type { SpendControls } from "./types.js";
import { controlsView } from "./fund-views.js";

export type AppCap = components["schemas"]["AppCap"];

const controlsOf = (row: AppCapsTable): SpendControls => JSON.parse(row.controls) as SpendControls;

const capNotFound = (appId: string) => notFound("APP_CAP_NOT_FOUND", "the app has no cap", { metadata: { appId } });

export class AppCaps {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly policy: FundPolicies,
    private readonly pageTokens: PageTokens,
    private readonly tenantId: string,
  ) {}

  private view(row: AppCapsTable): AppCap {
    return {
      appId: row.app_id,
      tenantId: this.tenantId,
      controls: controlsView(controlsOf(row)),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      deletedAt: row.deleted_at,
    };
  }

  async get(appId: string): Promise<AppCap> {
    const row = await this.liveRow(this.storage.db, appId);
    if (!row) throw capNotFound(appId);
    return this.view(row);
  }

  /** Live caps ordered by app_id. */
  async list(size: number | undefined, token: string | undefined): Promise<Page<AppCap>> {
    const scope = "app-caps.list";
    const after = this.pageTokens.decode(scope, token, "query.page_token", 1);
    const limit = pageSize(size);
    let query = this.storage.db.selectFrom("app_caps").selectAll().where("deleted_at", "is", null);
    if (after) query = query.where("app_id", ">", String(after[0]));
    const rows = await query.orderBy("app_id").limit(limit + 1).execute();
    return this.pageTokens.page(scope, rows, limit, (r) => [r.app_id], (r) => this.view(r));
  }

  /** Creates the cap or replaces its controls as a whole; controls with nothing set are 400 (use Delete). */
  async set(appId: string, input: unknown, origin?: Origin): Promise<AppCap> {
    const row = await changeControlsRow(this.storage, this.access(appId), (row, currencyCode) => {
      const now = this.clock.now();
      const stamp = new Date(now).toISOString();
      const before = row ? controlsOf(row) : null;
      const after = replaceControls(input, before, currencyCode, "body.controls", now);
      if (isEmpty(after)) {
        throw invalidField("body.controls", "must set at least one of limit, extension, suspension, perAuthorization, maxAuthorizations (to remove the cap, delete it)", "CONTROLS_EMPTY");
      }
      if (row && sameControls(before, after)) return { answer: row };
      const columns = { controls: JSON.stringify(after), amount_currency: amountCurrency(after), updated_at: stamp };
      const written: AppCapsTable = row ? { ...row, ...columns } : { id: newId(), app_id: appId, ...columns, created_at: stamp, deleted_at: null };
      const audit = auditRow(origin, now, { operationId: "svc.api.funds.v1.AppCapService.Set", target: capTarget(appId), before: row ? this.view(row) : null, after: this.view(written) });
      return { answer: written, write: written, audit };
    }, { origin });
    return this.view(row);
  }

  async delete(appId: string, origin?: Origin): Promise<void> {
    await writeTransaction(this.storage, { exclusive: [`app_caps:${appId}`] }, async (db) => {
      const row = await this.liveRow(db, appId);
      if (!row) throw capNotFound(appId);
      const now = this.clock.now();
      await db.updateTable("app_caps").set({ deleted_at: new Date(now).toISOString() }).where("id", "=", row.id).execute();
      await recordAudit(db, origin, now, { operationId: "svc.api.funds.v1.AppCapService.Delete", target: capTarget(appId), before: this.view(row), after: null });
    }, { origin });
  }

  /** How ./controls-write.ts reads and writes the app's cap. */
  private access(appId: string): ControlsRowAccess<AppCapsTable> {
    const values = { appId, tenantId: this.policy.tenantId };
    return {
      table: "app_caps",
      lock: `app_caps:${appId}`,
      tenantId: values.tenantId,
      read: async (db) => {
        const found = (await capAndCurrencyStatement.execute(db, values)).rows[0];
        if (!found) throw new Error(`no fund policy for tenant ${values.tenantId}; FundPolicies.ensure runs at start`);
        const { fund_currency: currency, ...row } = found;
        return { row: row.id === null ? undefined : (row as AppCapsTable), currency };
      },
    };
  }

  private async liveRow(db: Db, appId: string): Promise<AppCapsTable | undefined> {
    return db.selectFrom("app_caps").selectAll().where("app_id", "=", appId).where("deleted_at", "is", null).executeTakeFirst();
  }
}

/** The app's live cap (columns null: none) and the fund currency, in one statement. */
const capAndCurrencyStatement = prepared((db, v: { appId: string; tenantId: string }) =>
  db
    .selectFrom("fund_policy")
    .leftJoin("app_caps", (join) => join.on("app_caps.app_id", "=", v.appId).on("app_caps.deleted_at", "is", null))
    .selectAll("app_caps")
    .select("fund_policy.currency_code as fund_currency")
    .where("fund_policy.tenant_id", "=", v.tenantId),
);
