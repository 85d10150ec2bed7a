// The tenant's fund policy: the one currency every amount is stated in, the IANA time zone whose
// calendar fixes spend windows, and the tenant default controls (the last layer of resolution).
// One row per tenant, created at start. Readers that hold no lock on it use the copy kept per process
// while the fund policy's change watch trusts it (a change shows at once on the instance that made
// it, within 1 s on every other); writers that check money against the currency read it under the
// policy's lock, in their transaction.
import type { components } from "../../generated/api.js";
import type { Clock } from "../core/clock.js";
import { recordAudit } from "../audit/audit-record.js";
import { FUND_POLICY_TARGET } from "../audit/change.js";
import type { Origin } from "../core/origin.js";
import { recordChange, type ChangeWatch } from "../storage/change-versions.js";
import { failedPrecondition, invalidField } from "../core/errors.js";
import type { Storage } from "../storage/connect.js";
import type { FundPolicyTable } from "../storage/schema.js";
import { writeTransaction, type Db } from "../storage/transactions.js";
import { amountCurrency, isEmpty, replaceControls, sameControls } from "./controls.js";
import { isSet } from "./guards.js";
import type { SpendControls } from "./types.js";
import { canonicalTimeZone } from "./time-zone.js";
import { controlsView } from "./fund-views.js";

export type FundPolicy = components["schemas"]["FundPolicy"];

/** The lock key every write that checks money against the fund currency holds shared. */
export const FUND_POLICY_LOCK = "fund_policy";

const CURRENCY = /^[A-Z]{3}$/;
const MASK_FIELDS = ["currencyCode", "defaultControls", "timeZone"] as const;
type MaskField = (typeof MASK_FIELDS)[number];

export interface StoredPolicy {
  currencyCode: string;
  /** Canonical IANA time zone name (time-zone.ts) whose calendar fixes spend windows (`spendWindowBounds` in spend-window.ts). */
  timeZone: string;
  defaultControls: SpendControls | null;
  updatedAt: string | null;
}

/**
 * The policy of a fund_policy row (the resolution's combined read, ./effective.ts, selects it with the
 * layers). Its zone by its canonical name: releases before this one stored names as sent (`utc`,
 * `Europe/paris`); a name the runtime no longer knows stays as stored.
 */
/** The policy's row as stored. */
export type FundPolicyRow = Omit<FundPolicyTable, "tenant_id">;

export const storedPolicy = (row: FundPolicyRow): StoredPolicy => ({
  currencyCode: row.currency_code,
  timeZone: canonicalTimeZone(row.time_zone) ?? row.time_zone,
  defaultControls: row.default_controls === null ? null : (JSON.parse(row.default_controls) as SpendControls),
  updatedAt: row.updated_at,
});

const policyView = (policy: StoredPolicy): FundPolicy => ({
  currencyCode: policy.currencyCode,
  timeZone: policy.timeZone,
  defaultControls: policy.defaultControls ? controlsView(policy.defaultControls) : null,
  updatedAt: policy.updatedAt,
});

/**
 * `currencyCode,defaultControls,timeZone`; absent or empty names every field, `timeZone` only when
 * it is sent (a client written before the field existed does not reset the zone).
 */
function parseMask(mask: string | undefined | null, timeZoneSent: boolean): Set<MaskField> {
  if (!mask) return new Set(MASK_FIELDS.filter((f) => f !== "timeZone" || timeZoneSent));
  const fields = mask.split(",");
  for (const field of fields) {
    if (!(MASK_FIELDS as readonly string[]).includes(field)) {
      throw invalidField("body.updateMask", `names unknown field "${field}" (allowed: ${MASK_FIELDS.join(", ")})`, "INVALID_UPDATE_MASK");
    }
  }
  return new Set(fields as MaskField[]);
}

export class FundPolicies {
  /** The policy as last read (and its row as stored), with the watch's generation taken before the read. */
  private kept: { policy: StoredPolicy; row: FundPolicyRow; generation: number } | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    readonly tenantId: string,
    private readonly changes: ChangeWatch,
  ) {}

  /** Creates the tenant's policy with `currencyCode` unless it exists; an existing one is kept as it is. */
  async ensure(currencyCode: string): Promise<void> {
    await this.storage.db
      .insertInto("fund_policy")
      .values({ tenant_id: this.tenantId, currency_code: currencyCode, time_zone: "UTC", default_controls: null, updated_at: null })
      .onConflict((oc) => oc.column("tenant_id").doNothing())
      .execute();
  }

  /** The policy as stored; `db` is a transaction's connection when the caller is in one. */
  async load(db: Db = this.storage.db): Promise<StoredPolicy> {
    return storedPolicy(await this.loadRow(db));
  }

  private async loadRow(db: Db): Promise<FundPolicyRow> {
    const row = await db.selectFrom("fund_policy").select(["currency_code", "time_zone", "default_controls", "updated_at"]).where("tenant_id", "=", this.tenantId).executeTakeFirst();
    if (!row) throw new Error(`no fund policy for tenant ${this.tenantId}; FundPolicies.ensure runs at start`);
    return row;
  }

  /**
   * The policy for a reader outside any lock on it: the kept copy while the watch trusts it, else
   * read (and kept). A change by any instance replaces it within 1 s, by this one at once.
   */
  async current(): Promise<StoredPolicy> {
    return (await this.currentWithRow()).policy;
  }

  /** `current`, with its row as stored: a one-call decision checks under the policy's lock that it is still the row. */
  async currentWithRow(): Promise<{ policy: StoredPolicy; row: FundPolicyRow }> {
    const kept = this.kept;
    if (kept && this.changes.trusts(kept.generation)) return kept;
    // Taken before the read: a change seen while it runs leaves what it read untrusted.
    const generation = this.changes.generation;
    const row = await this.loadRow(this.storage.db);
    this.kept = { policy: storedPolicy(row), row, generation };
    return this.kept;
  }

  /** The currency every amount must be stated in. */
  async currency(db: Db = this.storage.db): Promise<string> {
    return (await this.load(db)).currencyCode;
  }

  async get(): Promise<FundPolicy> {
    return policyView(await this.current());
  }

  /**
   * Replaces the fields named in `updateMask`. A currency change while any stored amount (a live
   * subject-app row, a live app cap, default controls kept by this update, or any spend
   * authorization) is in another currency is 409 CURRENCY_IN_USE; new default controls must be in the policy's new currency.
   */
  async update(input: { currencyCode?: unknown; defaultControls?: unknown; timeZone?: unknown }, updateMask: string | undefined, origin?: Origin): Promise<FundPolicy> {
    const mask = parseMask(updateMask, input.timeZone !== undefined);
    const { policy: updated, changed } = await writeTransaction(this.storage, { exclusive: [FUND_POLICY_LOCK] }, async (db) => {
      const now = this.clock.now();
      const stored = await this.load(db);

      let currencyCode = stored.currencyCode;
      if (mask.has("currencyCode")) {
        if (typeof input.currencyCode !== "string" || !CURRENCY.test(input.currencyCode)) {
          throw invalidField("body.fundPolicy.currencyCode", "must be an ISO 4217 code such as USD", "INVALID_CURRENCY");
        }
        currencyCode = input.currencyCode;
      }

      let timeZone = stored.timeZone;
      if (mask.has("timeZone")) {
        const canonical = typeof input.timeZone === "string" ? canonicalTimeZone(input.timeZone) : undefined;
        if (canonical === undefined) {
          throw invalidField("body.fundPolicy.timeZone", "must be an IANA time zone name such as Europe/Paris", "INVALID_TIME_ZONE");
        }
        timeZone = canonical;
      }

      let defaultControls = stored.defaultControls;
      if (mask.has("defaultControls")) {
        const path = "body.fundPolicy.defaultControls";
        const replaced = isSet(input.defaultControls) ? replaceControls(input.defaultControls, stored.defaultControls, currencyCode, path, now) : null;
        // Controls with nothing set state no opinion, exactly as no default at all.
        defaultControls = isEmpty(replaced) ? null : replaced;
      }

      if (currencyCode !== stored.currencyCode) await this.requireCurrencyUnused(db, currencyCode, mask.has("defaultControls") ? null : defaultControls);

      if (currencyCode === stored.currencyCode && timeZone === stored.timeZone && sameControls(defaultControls, stored.defaultControls)) {
        return { policy: stored, changed: false };
      }
      const updatedAt = new Date(now).toISOString();
      await db
        .updateTable("fund_policy")
        .set({ currency_code: currencyCode, time_zone: timeZone, default_controls: defaultControls === null ? null : JSON.stringify(defaultControls), updated_at: updatedAt })
        .where("tenant_id", "=", this.tenantId)
        .execute();
      await recordChange(db, "fund_policy");
      const policy = { currencyCode, timeZone, defaultControls, updatedAt };
      await recordAudit(db, origin, now, { operationId: "svc.api.funds.v1.FundPolicyService.Update", target: FUND_POLICY_TARGET, before: policyView(stored), after: policyView(policy) });
      return { policy, changed: true };
    }, { origin });
    if (changed) this.changes.changedHere();
    return policyView(updated);
  }

  /** 409 when an amount stored anywhere (live rows, live caps, spends, `keptDefaults`) is not in `currencyCode`. */
  private async requireCurrencyUnused(db: Db, currencyCode: string, keptDefaults: SpendControls | null): Promise<void> {
    const inUse = async (table: "subject_app_limits" | "app_caps") =>
      (await db
        .selectFrom(table)
        .select("amount_currency")
        .where("deleted_at", "is", null)
        .where("amount_currency", "is not", null)
        .where("amount_currency", "!=", currencyCode)
        .limit(1)
        .executeTakeFirst()) !== undefined;
    // Spends keep their currency forever: a window's sums, a later capture or reversal would mix two.
    // Every spend is in the stored currency (this check is why), which `currencyCode` is not: any
    // spend at all holds it, and the first row answers.
    const spent = (await db.selectFrom("spend_authorizations").select("id").limit(1).executeTakeFirst()) !== undefined;
    const defaultsCurrency = amountCurrency(keptDefaults);
    const holders = [
      ...((await inUse("subject_app_limits")) ? ["subject-app limits"] : []),
      ...((await inUse("app_caps")) ? ["app caps"] : []),
      ...(defaultsCurrency !== null && defaultsCurrency !== currencyCode ? ["the default controls"] : []),
      ...(spent ? ["spend authorizations"] : []),
    ];
    if (holders.length > 0) {
      throw failedPrecondition("CURRENCY_IN_USE", `the fund currency cannot change to ${currencyCode} while ${holders.join(", ")} hold amounts in another currency`, {
        metadata: { currencyCode },
      });
    }
  }
}
