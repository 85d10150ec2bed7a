// The layered resolution of seed 2.3: the first layer with an opinion decides, each layer resolved
// by the same per-row rule (suspension; else an unexpired extension; else the base limit; else
// no opinion). Pure: time comes in as `now` from the Clock.
import { quotedWithin } from "../core/storable-text.js";
import { formatMoney } from "./money.js";
import { limitKind } from "./spends/spend-limit.js";
import type { EffectiveCause, EffectiveLimit, LimitScope, PeriodKind, SpendControls, SpendLimit } from "./types.js";

export interface Layer {
  scope: LimitScope;
  /** Null when the layer has no row. */
  controls: SpendControls | null;
}

/** The period every amount takes when no layer states one. */
const DEFAULT_PERIOD: WindowPeriod = "PERIOD_KIND_MONTHLY";
/** The contract's bound on a line of a trace (`EffectiveLimit.trace`, `SpendDecision.trace`), in characters. */
export const MAX_TRACE_LINE = 500;
/**
 * A reason is quoted into the trace as a JSON string of at most this many characters, escapes
 * included, so its line (with the scope and its words, under 50) fits MAX_TRACE_LINE whatever the
 * stored reason holds: a row stored before the text rule may hold control characters, six
 * characters each once escaped.
 */
const MAX_TRACE_REASON = 200;

/** A period that picks a spend window (every kind but UNSPECIFIED). */
export type WindowPeriod = Exclude<PeriodKind, "PERIOD_KIND_UNSPECIFIED">;

/** The resolution, with the period whose window a spend decided by it counts in. */
export interface Resolution {
  effective: EffectiveLimit;
  /**
   * The resolved period of an amount decision; for any other decision the period the deciding row
   * states or inherits, else monthly (the answer keeps `period` null for those: this is internal).
   */
  windowPeriod: WindowPeriod;
}

/**
 * Resolves the limit in force at `now` (ms since the epoch). `layers` run most specific first:
 * subject-app row, app cap, tenant default.
 */
export function resolveEffective(layers: readonly Layer[], now: number): EffectiveLimit {
  return resolveLimit(layers, now).effective;
}

/**
 * resolveEffective, with the window period (GetEffective's usage and Authorize both use it). The
 * cap per authorization and the count per window are each resolved on their own, by the same
 * layering: the first layer stating one applies, whichever layer decided the limit; none is in
 * force under a deny (nothing is admitted).
 */
export function resolveLimit(layers: readonly Layer[], now: number): Resolution {
  const { effective, windowPeriod } = resolveRows(layers, now);
  if (effective.decision === "EFFECTIVE_DECISION_DENY") return { effective: { ...effective, perAuthorization: null, maxAuthorizations: null }, windowPeriod };
  const capping = layers.find((layer) => layer.controls?.perAuthorization);
  const perAuthorization = capping?.controls?.perAuthorization ?? null;
  if (capping && perAuthorization) effective.trace.push(`${capping.scope}: per authorization ${formatMoney(perAuthorization)} -> cap`);
  const counting = layers.find((layer) => layer.controls?.maxAuthorizations);
  const maxAuthorizations = counting?.controls?.maxAuthorizations ?? null;
  if (counting && maxAuthorizations) effective.trace.push(`${counting.scope}: at most ${maxAuthorizations} authorizations per window -> count`);
  return { effective: { ...effective, perAuthorization, maxAuthorizations }, windowPeriod };
}

type RowsResolution = { effective: Omit<EffectiveLimit, "perAuthorization" | "maxAuthorizations">; windowPeriod: WindowPeriod };

/** The limit in force: the first layer with an opinion decides, each by the per-row rule. */
function resolveRows(layers: readonly Layer[], now: number): RowsResolution {
  const evaluatedAt = new Date(now).toISOString();
  const trace: string[] = [];

  for (const [index, { scope, controls }] of layers.entries()) {
    if (!controls) {
      trace.push(`${scope}: no row -> no opinion`);
      continue;
    }
    const period = rowPeriod(controls, layers, index);

    // 1. A suspension denies whatever is underneath; what it froze is not the limit in force, so none is answered.
    if (controls.suspension) {
      const reason = controls.suspension.reason ? ` (${quotedWithin(controls.suspension.reason, MAX_TRACE_REASON)})` : "";
      trace.push(`${scope}: suspended${reason} -> deny`);
      const effective: RowsResolution["effective"] = { decision: "EFFECTIVE_DECISION_DENY", limit: null, period: null, scope, cause: "CAUSE_SUSPENSION", evaluatedAt, trace };
      return { effective, windowPeriod: period.period };
    }

    // 2. An unexpired extension; one that has lapsed (expiresAt <= now) falls back to this row's own limit.
    let prefix = "";
    const ext = controls.extension;
    if (ext) {
      const expiresAt = ext.expiresAt ? Date.parse(ext.expiresAt) : Number.NaN;
      if (ext.limit && now < expiresAt) {
        const label = `extension until ${new Date(expiresAt).toISOString()}`;
        return { effective: decide(ext.limit, "CAUSE_EXTENSION", label, scope, period, evaluatedAt, trace), windowPeriod: period.period };
      }
      // Stored extensions always have a limit and an expiry; one lacking either never takes effect.
      prefix = Number.isFinite(expiresAt) ? `extension lapsed at ${new Date(expiresAt).toISOString()}; ` : "extension without expiry ignored; ";
    }

    // 3. The base limit.
    if (controls.limit) {
      return { effective: decide(controls.limit, "CAUSE_LIMIT", `${prefix}base limit`, scope, period, evaluatedAt, trace), windowPeriod: period.period };
    }

    // 4. No opinion: the next layer decides.
    trace.push(`${scope}: ${prefix}${prefix ? "no base limit" : "nothing set"} -> no opinion`);
  }

  trace.push("no layer states an opinion -> deny");
  const effective: RowsResolution["effective"] = { decision: "EFFECTIVE_DECISION_DENY", limit: null, period: null, scope: "SCOPE_UNSPECIFIED", cause: "CAUSE_NO_LIMIT", evaluatedAt, trace };
  return { effective, windowPeriod: DEFAULT_PERIOD };
}

interface ResolvedPeriod {
  period: WindowPeriod;
  /** How it was found, for the trace. */
  source: string;
}

/** A layer states a period when it has a limit with a period (UNSPECIFIED is no period). */
function statedPeriod(controls: SpendControls | null): WindowPeriod | undefined {
  const period = controls?.limit ? controls.period : undefined;
  return period === "PERIOD_KIND_UNSPECIFIED" ? undefined : period;
}

/**
 * The period of an amount decided at `layers[index]`: the row's own (an extension never changes
 * it), else that of the next layer below that states one, else monthly.
 */
function rowPeriod(controls: SpendControls, layers: readonly Layer[], index: number): ResolvedPeriod {
  const own = statedPeriod(controls);
  if (own) return { period: own, source: own };
  for (const lower of layers.slice(index + 1)) {
    const inherited = statedPeriod(lower.controls);
    if (inherited) return { period: inherited, source: `${inherited} from ${lower.scope}` };
  }
  return { period: DEFAULT_PERIOD, source: `${DEFAULT_PERIOD} by default` };
}

/** The answer when `limit` applies at `scope`. */
function decide(
  limit: SpendLimit,
  cause: EffectiveCause,
  label: string,
  scope: LimitScope,
  period: ResolvedPeriod,
  evaluatedAt: string,
  trace: string[],
): RowsResolution["effective"] {
  switch (limitKind(limit)) {
    case "blocked":
      trace.push(`${scope}: ${label} blocked -> deny`);
      return { decision: "EFFECTIVE_DECISION_DENY", limit: { blocked: {} }, period: null, scope, cause: "CAUSE_BLOCKED", evaluatedAt, trace };
    case "unlimited":
      trace.push(`${scope}: ${label} unlimited -> unlimited`);
      return { decision: "EFFECTIVE_DECISION_UNLIMITED", limit: { unlimited: {} }, period: null, scope, cause, evaluatedAt, trace };
    case "amount": {
      const money = limit.amount?.money;
      trace.push(`${scope}: ${label} ${money ? formatMoney(money) : "amount"} per ${period.source} -> limit`);
      return { decision: "EFFECTIVE_DECISION_LIMIT", limit, period: period.period, scope, cause, evaluatedAt, trace };
    }
  }
}
