// App caps: the controls of one app for every subject, the middle layer of resolution. Set replaces
// a cap's controls as a whole; Delete removes the cap (deleted_at set), and a later Set creates a new one.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { invalidField, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { pageSize, type Page, type PageTokens } from "../core/pagination.js";
import type { Storage } from "../storage/connect.js";
import type { AppCapsTable } from "../storage/schema.js";
import { writeTransaction, type Db } from "../storage/transactions.js";
import { amountCurrency, isEmpty, replaceControls, sameControls } from "./controls.js";
import { FUND_POLICY_LOCK, type FundPolicies } from "./fund-policy.js";
import type { SpendControls } from "./types.js";
import { controlsView } from "./views.js";

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
  async set(appId: string, input: unknown): Promise<AppCap> {
    const row = await writeTransaction(this.storage, { exclusive: [`app_caps:${appId}`], shared: [FUND_POLICY_LOCK] }, async (db) => {
      const row = await this.liveRow(db, appId);
      const now = this.clock.now();
      const stamp = new Date(now).toISOString();
      const before = row ? controlsOf(row) : null;
      const after = replaceControls(input, before, await this.policy.currency(db), "body.controls", now);
      if (isEmpty(after)) {
        throw invalidField("body.controls", "must set at least one of limit, extension, suspension (to remove the cap, delete it)", "CONTROLS_EMPTY");
      }
      if (row && sameControls(before, after)) return row;
      const columns = { controls: JSON.stringify(after), amount_currency: amountCurrency(after), updated_at: stamp };
      if (row) {
        await db.updateTable("app_caps").set(columns).where("id", "=", row.id).execute();
        return { ...row, ...columns };
      }
      const created: AppCapsTable = { id: newId(), app_id: appId, ...columns, created_at: stamp, deleted_at: null };
      await db.insertInto("app_caps").values(created).execute();
      return created;
    });
    return this.view(row);
  }

  async delete(appId: string): Promise<void> {
    await writeTransaction(this.storage, { exclusive: [`app_caps:${appId}`] }, async (db) => {
      const row = await this.liveRow(db, appId);
      if (!row) throw capNotFound(appId);
      await db.updateTable("app_caps").set({ deleted_at: new Date(this.clock.now()).toISOString() }).where("id", "=", row.id).execute();
    });
  }

  private async liveRow(db: Db, appId: string): Promise<AppCapsTable | undefined> {
    return db.selectFrom("app_caps").selectAll().where("app_id", "=", appId).where("deleted_at", "is", null).executeTakeFirst();
  }
}
