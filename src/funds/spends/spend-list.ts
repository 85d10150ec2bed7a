// SpendService.List: authorizations newest first (created_at desc, id desc), filtered by subject,
// app, state as answered now, and window; keyset pages whose tokens are bound to the caller and
// the filters. Ids are time-ordered (src/core/ids.ts) from the instant of created_at, so ordering
// by id alone is that order, and each List index (spend_authorizations_by_*) ends with the id.
import { sql } from "kysely";
import type { Clock } from "../../core/clock.js";
import { invalidField } from "../../core/errors.js";
import { pageSize, type Page, type PageTokens } from "../../core/pagination.js";
import type { Storage } from "../../storage/connect.js";
import { listScope, type SpendAccess } from "./spend-access.js";
import { authorizationView, selectRows, toRow, type SpendAuthorization } from "./spend-rows.js";
import { parseTimestamp } from "../../core/timestamp.js";

export interface ListQuery {
  user_id?: string | undefined;
  app_id?: string | undefined;
  state?: string | undefined;
  window_start?: string | undefined;
  page_size?: number | undefined;
  page_token?: string | undefined;
}

const STATES = ["PENDING", "CAPTURED", "RELEASED", "EXPIRED", "DECLINED"] as const;
type Filter = (typeof STATES)[number];

function stateFilter(state: string | undefined): Filter | null {
  if (state === undefined) return null;
  const short = state.replace(/^SPEND_AUTHORIZATION_STATE_/, "");
  if (!(STATES as readonly string[]).includes(short) || !state.startsWith("SPEND_AUTHORIZATION_STATE_")) {
    throw invalidField("query.state", "must be a state other than SPEND_AUTHORIZATION_STATE_UNSPECIFIED");
  }
  return short as Filter;
}

export class SpendList {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly pageTokens: PageTokens,
  ) {}

  /** `callerId` binds the page tokens to the caller who was given them. */
  async list(access: SpendAccess, callerId: string, query: ListQuery): Promise<Page<SpendAuthorization>> {
    const { userIds, appIds } = listScope(access, query.user_id, query.app_id);
    const state = stateFilter(query.state);
    const windowStart = query.window_start === undefined ? null : parseTimestamp(query.window_start, "query.window_start");
    const scope = `spend-authorizations.list:${callerId}:${JSON.stringify({ userIds, appIds, state, windowStart })}`;
    const after = this.pageTokens.decode(scope, query.page_token, "query.page_token", 1);
    const limit = pageSize(query.page_size);
    const nowIso = new Date(this.clock.now()).toISOString();
    // An app service bound to no app sees nothing.
    if (appIds !== null && appIds.length === 0) return { items: [], nextPageToken: "" };

    let q = selectRows(this.storage.db);
    if (userIds) q = q.where("user_id", "in", userIds);
    if (appIds) q = appIds.length === 1 ? q.where("app_id", "=", appIds[0]!) : q.where("app_id", "in", appIds);
    if (windowStart) q = q.where("window_start", "=", windowStart);
    if (state === "PENDING") q = q.where(sql<boolean>`state = 'PENDING'`).where("expires_at", ">", nowIso);
    else if (state === "EXPIRED") q = q.where(sql<boolean>`state = 'PENDING'`).where("expires_at", "<=", nowIso);
    else if (state) q = q.where("state", "=", state);
    if (after) q = q.where("id", "<", String(after[0]));
    const rows = await q.orderBy("id", "desc").limit(limit + 1).execute();
    return this.pageTokens.page(scope, rows, limit, (r) => [r.id], (r) => authorizationView(toRow(r), nowIso));
  }
}
