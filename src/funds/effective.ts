// The limit in force for one subject and one app now: the three layers read from one snapshot (the
// policy with them under its lock, as Authorize reads it; the policy kept per process for GetEffective),
// resolved by the pure rule of ./resolve.ts at the clock's time, with the usage of the window the
// resolution's period picks. GetEffective and Authorize resolve alike (`resolved`).
import { expressionBuilder, sql } from "kysely";
import type { Clock } from "../core/clock.js";
import type { Origin } from "../core/origin.js";
import { notFound } from "../core/errors.js";
import type { Storage } from "../storage/connect.js";
import { prepared } from "../storage/prepared.js";
import type { Database, FundPolicyTable } from "../storage/schema.js";
import { writeTransaction, type Db } from "../storage/transactions.js";
import { storedPolicy, type FundPolicies, type StoredPolicy } from "./fund-policy.js";
import { resolveLimit, type Resolution, type WindowPeriod } from "./resolve.js";
import { spendWindowBounds, WINDOW_PERIODS, type WindowBounds } from "./spends/spend-window.js";
import { amountLimit, anySpendIn, lockWindow, NOTHING_USED, usageColumn, usageOf, usageView, type SpendUsageView, type Usage, type WindowKey } from "./spends/spend-usage.js";
import type { EffectiveLimit, SpendControls, SpendLimitView } from "./types.js";
import { spendLimitView } from "./fund-views.js";
import { toNanos } from "./money.js";

/** The resolution as answered: its limit with every arm present, and the current window's usage. */
export type EffectiveLimitView = Omit<EffectiveLimit, "limit"> & { limit: SpendLimitView | null; usage: SpendUsageView };

/** What a spend decided now would be held against. */
export interface LimitInForce {
  resolution: Resolution;
  currencyCode: string;
  /** The window of the resolution's period containing now, in the fund policy's time zone. */
  window: WindowKey;
  /** The amount cap of an amount decision, else null. */
  limit: bigint | null;
  /** The cap on one authorization in force, else null. */
  perAuthorization: bigint | null;
  /** The count of authorizations per window in force, else null. */
  maxAuthorizations: number | null;
}

type LayerValues = { userId: string; appId: string };

/**
 * Whether the user exists and the live subject-app row's and app cap's controls. The live rows are
 * unique (partial unique indexes), so each subquery has at most one row.
 */
const layerColumns = (v: LayerValues) => {
  const eb = expressionBuilder<Database, never>();
  return [
    eb.selectFrom("users").select("users.id").where("users.id", "=", v.userId).as("user_id"),
    eb
      .selectFrom("subject_app_limits")
      .select("subject_app_limits.controls")
      .where("subject_app_limits.user_id", "=", v.userId)
      .where("subject_app_limits.app_id", "=", v.appId)
      .where("subject_app_limits.deleted_at", "is", null)
      .as("row_controls"),
    eb.selectFrom("app_caps").select("app_caps.controls").where("app_caps.app_id", "=", v.appId).where("app_caps.deleted_at", "is", null).as("cap_controls"),
  ] as const;
};

/**
 * The fund policy and the layers in one statement (one snapshot, one round trip on PostgreSQL): a
 * decision's reads under the policy's lock.
 */
const policyAndLayersStatement = prepared((db, v: LayerValues & { tenantId: string }) =>
  db
    .selectFrom("fund_policy")
    .select(["currency_code", "time_zone", "default_controls", "updated_at"])
    .select(layerColumns(v))
    .where("fund_policy.tenant_id", "=", v.tenantId),
);

/** The user's id (null when there is no such user) and the live subject-app row's and app cap's controls, as stored. */
export interface Layers {
  user_id: string | null;
  row_controls: string | null;
  cap_controls: string | null;
}

/**
 * GetEffective's read, for the policy kept by FundPolicies.current: the layers and the usage at
 * `now` of the window of every period that contains it (the period in force depends on the layers),
 * one statement, so one snapshot without a transaction: one round trip on PostgreSQL. The values
 * named by a period are that period's window start, and by `<period>.end` its end.
 */
const layersAndUsageStatement = prepared((db, v: LayerValues & { now: string } & Record<WindowPeriod | `${WindowPeriod}.end`, string>) =>
  db
    .selectNoFrom([...layerColumns(v), ...WINDOW_PERIODS.map((p) => usageColumn(p, { userId: v.userId, appId: v.appId, windowStart: v[p], windowEnd: v[`${p}.end`], now: v.now }))])
    .$castTo<Layers & Record<string, unknown>>(),
);

/**
 * PostgreSQL: the fund policy and the layers as `policyAndLayersStatement` reads them, after a shared
 * lock, in one round trip (spend_policy_layers, src/storage/postgres-functions.sql); run with its values inlined, so
 * that as a transaction's first statement it carries the BEGIN too.
 */
const lockedPolicyAndLayersStatement = prepared((db, v: LayerValues & { tenantId: string; lock: string }) =>
  db
    .selectFrom(sql<Omit<FundPolicyTable, "tenant_id"> & Layers>`spend_policy_layers(${v.lock}, ${v.tenantId}, ${v.userId}, ${v.appId})`.as("l"))
    .selectAll(),
);

const controls = (json: string | null): SpendControls | null => (json === null ? null : (JSON.parse(json) as SpendControls));

/** 404 USER_NOT_FOUND, as SubjectAppLimits.requireUser answers it. */
const userNotFound = (userId: string) => notFound("USER_NOT_FOUND", "no user with this id", { metadata: { userId } });

export class EffectiveLimits {
  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly policy: FundPolicies,
  ) {}

  /** For an administrator: 404 USER_NOT_FOUND for an unknown user. */
  async forSubject(userId: string, appId: string, origin?: Origin): Promise<EffectiveLimitView> {
    return this.resolve(userId, appId, true, origin);
  }

  /** For the caller (who exists: it authenticated). */
  async forCaller(userId: string, appId: string, origin?: Origin): Promise<EffectiveLimitView> {
    return this.resolve(userId, appId, false, origin);
  }

  /**
   * The layers read through `db` (a transaction's connection) in one statement, resolved at `now`.
   * With `requireUser`, 404 USER_NOT_FOUND when the user does not exist (read in the same statement).
   * With `sharedLock`, the transaction first takes that key's lock shared until it ends, as
   * `writeTransaction`'s shared keys: on PostgreSQL in the read's round trip, the read after it.
   */
  async inForce(db: Db, userId: string, appId: string, now: number, requireUser: boolean, sharedLock?: string): Promise<LimitInForce> {
    const values = { tenantId: this.policy.tenantId, userId, appId };
    const { rows } =
      sharedLock !== undefined && this.storage.dialect === "postgres"
        ? await lockedPolicyAndLayersStatement.executeInlined(db, { ...values, lock: sharedLock })
        : await policyAndLayersStatement.execute(db, values);
    const row = rows[0];
    if (!row) throw new Error(`no fund policy for tenant ${this.policy.tenantId}; FundPolicies.ensure runs at start`);
    const policy = storedPolicy(row);
    return this.resolved(policy, row, userId, appId, now, requireUser, spendWindowBounds(policy.timeZone, now));
  }

  /** The resolution of the layers in `row` at `now`, its window that of its period among `windows`. */
  private resolved(policy: StoredPolicy, row: Layers, userId: string, appId: string, now: number, requireUser: boolean, windows: Readonly<Record<WindowPeriod, WindowBounds>>): LimitInForce {
    if (requireUser && row.user_id === null) throw userNotFound(userId);
    const layers = [
      { scope: "SCOPE_SUBJECT_APP" as const, controls: controls(row.row_controls) },
      { scope: "SCOPE_APP_CAP" as const, controls: controls(row.cap_controls) },
      { scope: "SCOPE_TENANT_DEFAULT" as const, controls: policy.defaultControls },
    ];
    const resolution = resolveLimit(layers, now);
    const window: WindowKey = { userId, appId, ...windows[resolution.windowPeriod] };
    const { perAuthorization, maxAuthorizations } = resolution.effective;
    return { resolution, currencyCode: policy.currencyCode, window, limit: amountLimit(resolution.effective), perAuthorization: perAuthorization ? toNanos(perAuthorization) : null, maxAuthorizations };
  }

  /**
   * The usage of a window without its row yet (no decision in it since its period's start, or a
   * period or time zone changed): nothing when no spend was made in it; else its row, created as a
   * decision creates it, seeded from those spends, so that this sum is taken once per window. Rows
   * are written only for windows with spends: a read of any app's usage stores nothing.
   */
  private async unwrittenUsage(window: WindowKey, now: number, origin: Origin | undefined): Promise<Usage> {
    if (!(await anySpendIn(this.storage.db, window))) return NOTHING_USED;
    return writeTransaction(this.storage, { exclusive: [] }, (db) => lockWindow(db, this.storage.dialect, window, new Date(now).toISOString()), { origin });
  }

  /**
   * The limit in force at `now` and its window's usage (undefined when the window has no row yet),
   * read without a lock in one statement (GetEffective's), with the kept policy's row as stored: a
   * one-call decision decides on them and checks under the locks that they are still so.
   */
  async snapshot(userId: string, appId: string, now: number, requireUser: boolean): Promise<{ force: LimitInForce; usage: Usage | undefined; policy: FundPolicyTable; layers: Layers }> {
    // Not under the policy's lock: the kept policy, as FundPolicyService.Get answers it.
    const { policy, row: policyRow } = await this.policy.currentWithRow();
    const windows = spendWindowBounds(policy.timeZone, now);
    const bounds = Object.fromEntries(WINDOW_PERIODS.flatMap((p) => [[p, windows[p].windowStart], [`${p}.end`, windows[p].windowEnd]])) as Record<WindowPeriod | `${WindowPeriod}.end`, string>;
    const { rows } = await layersAndUsageStatement.execute(this.storage.db, { userId, appId, now: new Date(now).toISOString(), ...bounds });
    const row = rows[0]!;
    const force = this.resolved(policy, row, userId, appId, now, requireUser, windows);
    const layers = { user_id: row.user_id, row_controls: row.row_controls, cap_controls: row.cap_controls };
    return { force, usage: usageOf(row, force.resolution.windowPeriod), policy: { ...policyRow, tenant_id: this.policy.tenantId }, layers };
  }

  /**
   * The limit in force at `now` on `layers` read earlier, with the kept policy as `snapshot` takes
   * it: a one-call decision on them checks under its locks that the layers are still those.
   */
  async onLayers(layers: Layers, userId: string, appId: string, now: number): Promise<{ force: LimitInForce; policy: FundPolicyTable }> {
    const { policy, row: policyRow } = await this.policy.currentWithRow();
    const force = this.resolved(policy, layers, userId, appId, now, true, spendWindowBounds(policy.timeZone, now));
    return { force, policy: { ...policyRow, tenant_id: this.policy.tenantId } };
  }

  private async resolve(userId: string, appId: string, requireUser: boolean, origin: Origin | undefined): Promise<EffectiveLimitView> {
    const now = this.clock.now();
    const snapshot = await this.snapshot(userId, appId, now, requireUser);
    const { force } = snapshot;
    const usage = snapshot.usage ?? (await this.unwrittenUsage(force.window, now, origin));
    const { effective } = force.resolution;
    return {
      ...effective,
      limit: effective.limit ? spendLimitView(effective.limit) : null,
      usage: usageView(force, usage),
    };
  }
}
