// The funds domain shapes, exactly as the contract puts them on the wire (JSON), with enums
// narrowed to their known values. test/funds/types.test-d.ts checks they fit the generated types.
import { PeriodKindValues, type KnownPeriodKind } from "../../generated/enums.js";

export interface Money {
  currencyCode: string;
  /** A non-negative int64 as a decimal string; units * 10^9 + nanos fits in int64. */
  units: string;
  /** 0 <= nanos < 10^9. */
  nanos: number;
}

export interface SpendLimitAmount {
  money?: Money | null;
}

/** The empty message `{}` carried by the arms of a oneof that hold no data. */
export type Empty = Record<string, never>;

/** Oneof `kind`: exactly one arm is set, the other two are absent or null. */
export type SpendLimit =
  | { amount: SpendLimitAmount; blocked?: null; unlimited?: null }
  | { amount?: null; blocked: Empty; unlimited?: null }
  | { amount?: null; blocked?: null; unlimited: Empty };

/** The known values, from the contract: requests must use one of them. */
export const PERIOD_KINDS = PeriodKindValues;
export type PeriodKind = KnownPeriodKind;

export interface SpendExtension {
  limit?: SpendLimit | null;
  expiresAt?: string | null;
  reason?: string;
}

export interface SpendSuspension {
  reason?: string;
  suspendedAt?: string | null;
}

/** Not a oneof: every field may be present; the one that does not take effect is kept. */
export interface SpendControls {
  limit?: SpendLimit | null;
  period?: PeriodKind;
  extension?: SpendExtension | null;
  suspension?: SpendSuspension | null;
  /** The cap on one authorization this layer states (resolved on its own, by the same layering). */
  perAuthorization?: Money | null;
  /** How many authorizations a window may count, as this layer states it (resolved likewise). */
  maxAuthorizations?: number | null;
}

/** A SpendLimit as answered: the arm that is set, the other two null. */
export type SpendLimitView =
  | { amount: { money: Money | null }; blocked: null; unlimited: null }
  | { amount: null; blocked: Empty; unlimited: null }
  | { amount: null; blocked: null; unlimited: Empty };

export interface SpendExtensionView {
  limit: SpendLimitView | null;
  expiresAt: string | null;
  reason: string;
}

export interface SpendSuspensionView {
  reason: string;
  suspendedAt: string | null;
}

/** SpendControls as answered: every field present; PERIOD_KIND_UNSPECIFIED when there is no period. */
export interface SpendControlsView {
  limit: SpendLimitView | null;
  period: PeriodKind;
  extension: SpendExtensionView | null;
  suspension: SpendSuspensionView | null;
  perAuthorization: Money | null;
  maxAuthorizations: number | null;
}

/** Resolution layers, most specific first; SCOPE_UNSPECIFIED when no layer decided. */
export type LimitScope = "SCOPE_SUBJECT_APP" | "SCOPE_APP_CAP" | "SCOPE_TENANT_DEFAULT" | "SCOPE_UNSPECIFIED";

export type EffectiveDecision = "EFFECTIVE_DECISION_DENY" | "EFFECTIVE_DECISION_LIMIT" | "EFFECTIVE_DECISION_UNLIMITED";

export type EffectiveCause = "CAUSE_SUSPENSION" | "CAUSE_BLOCKED" | "CAUSE_EXTENSION" | "CAUSE_LIMIT" | "CAUSE_NO_LIMIT";

export interface EffectiveLimit {
  decision: EffectiveDecision;
  limit: SpendLimit | null;
  period: PeriodKind | null;
  scope: LimitScope;
  cause: EffectiveCause;
  evaluatedAt: string;
  trace: string[];
  /** The cap on one authorization in force; null when no layer states one, or for a deny. */
  perAuthorization: Money | null;
  /** The count of authorizations per window in force; null likewise. */
  maxAuthorizations: number | null;
}
