// SpendControls: validation of a whole control set, and the pure mutations the services apply.
// The fields are not a oneof (seed 2.3): every mutation changes its own field and keeps the
// others, so a suspension never erases the limit it froze and a lapsed extension stays stored.
// Normalized controls omit unset fields (never null) and never carry PERIOD_KIND_UNSPECIFIED.
import { canonicalJson } from "../core/canonical-json.js";
import { invalidField } from "../core/errors.js";
import { isRecord, isSet, parseReason, requireRecord } from "./guards.js";
import { parseSpendLimit } from "./spends/spend-limit.js";
import type { LimitContext } from "./spends/spend-limit.js";
import { parseTimestamp } from "../core/timestamp.js";
import { parseMoney, toNanos } from "./money.js";
import { PERIOD_KINDS } from "./types.js";
import type { Money, PeriodKind, SpendControls, SpendExtension, SpendLimit, SpendSuspension } from "./types.js";
import { controlsView, extensionView } from "./fund-views.js";

/** A known PeriodKind, or undefined for absent and PERIOD_KIND_UNSPECIFIED (both mean "no period"). */
export function parsePeriod(input: unknown, path: string): PeriodKind | undefined {
  if (!isSet(input)) return undefined;
  if (typeof input !== "string" || !(PERIOD_KINDS as readonly string[]).includes(input)) {
    throw invalidField(path, `must be one of ${PERIOD_KINDS.join(", ")}`, "INVALID_PERIOD");
  }
  return input === "PERIOD_KIND_UNSPECIFIED" ? undefined : (input as PeriodKind);
}

/**
 * A limit and the period that denominates it, as carried side by side in SpendControls and in
 * the SetLimit body. `path` is their parent (`body`, `body.controls`). A period without a limit
 * is refused; a missing limit is the caller's to judge (null).
 */
export function parseLimitAndPeriod(
  limit: unknown,
  period: unknown,
  context: LimitContext,
  currencyCode: string,
  path: string,
): { limit: SpendLimit | null; period: PeriodKind | undefined } {
  const parsedPeriod = parsePeriod(period, `${path}.period`);
  if (!isSet(limit)) {
    if (parsedPeriod !== undefined) throw invalidField(`${path}.period`, "is only valid together with a limit", "PERIOD_WITHOUT_LIMIT");
    return { limit: null, period: undefined };
  }
  return { limit: parseSpendLimit(limit, context, currencyCode, `${path}.limit`), period: parsedPeriod };
}

/**
 * An extension replaces the row's total until it expires, so it must say both what and until
 * when: a limit (never blocked) and `expiresAt`. An already lapsed expiry is accepted, since a
 * lapsed extension is a state the row may be in (and read back, then written again).
 */
export function parseExtension(input: unknown, currencyCode: string, path: string): SpendExtension {
  const ext = requireRecord(input, path);
  if (!isSet(ext.limit)) throw invalidField(`${path}.limit`, "is required", "EXTENSION_LIMIT_MISSING");
  if (!isSet(ext.expiresAt)) throw invalidField(`${path}.expiresAt`, "is required", "EXTENSION_EXPIRY_MISSING");
  const reason = parseReason(ext.reason, `${path}.reason`);
  return {
    limit: parseSpendLimit(ext.limit, "extension", currencyCode, `${path}.limit`),
    expiresAt: parseTimestamp(ext.expiresAt, `${path}.expiresAt`),
    ...(reason === undefined ? {} : { reason }),
  };
}

/** A suspension as given; `suspendedAt` defaults to now. */
export function parseSuspension(input: unknown, path: string, now: number): SpendSuspension {
  const suspension = requireRecord(input, path);
  const reason = parseReason(suspension.reason, `${path}.reason`);
  const suspendedAt = isSet(suspension.suspendedAt)
    ? parseTimestamp(suspension.suspendedAt, `${path}.suspendedAt`)
    : new Date(now).toISOString();
  return { ...(reason === undefined ? {} : { reason }), suspendedAt };
}

/** A cap on one authorization: a Money of the fund currency greater than zero (absent or null: none). */
export function parsePerAuthorization(input: unknown, currencyCode: string, path: string): Money | null {
  if (!isSet(input)) return null;
  const money = parseMoney(input, currencyCode, path);
  if (toNanos(money) === 0n) throw invalidField(path, "must be greater than zero", "PER_AUTHORIZATION_NOT_POSITIVE");
  return money;
}

/** The most authorizations a window may count, as the contract bounds it. */
export const MAX_AUTHORIZATIONS = 1_000_000;

/** A count of authorizations per window: an integer from 1 to MAX_AUTHORIZATIONS (absent or null: none). */
export function parseMaxAuthorizations(input: unknown, path: string): number | null {
  if (!isSet(input)) return null;
  if (!Number.isInteger(input) || (input as number) < 1 || (input as number) > MAX_AUTHORIZATIONS) throw invalidField(path, `must be an integer from 1 to ${MAX_AUTHORIZATIONS}`);
  return input as number;
}

/**
 * Validates a whole SpendControls as app caps and the tenant default carry it (all limit arms)
 * and returns it normalized. `path` is the controls' field path, e.g. `body.controls`.
 */
export function parseControls(input: unknown, currencyCode: string, path: string, now: number): SpendControls {
  const controls = requireRecord(input, path);
  const { limit, period } = parseLimitAndPeriod(controls.limit, controls.period, "row", currencyCode, path);
  return compact({
    limit,
    period,
    extension: isSet(controls.extension) ? parseExtension(controls.extension, currencyCode, `${path}.extension`) : null,
    suspension: isSet(controls.suspension) ? parseSuspension(controls.suspension, `${path}.suspension`, now) : null,
    perAuthorization: parsePerAuthorization(controls.perAuthorization, currencyCode, `${path}.perAuthorization`),
    maxAuthorizations: parseMaxAuthorizations(controls.maxAuthorizations, `${path}.maxAuthorizations`),
  });
}

/** Drops unset fields (and the "no period" value) so equal controls have one shape. */
function compact(c: SpendControls): SpendControls {
  return {
    ...(c.limit ? { limit: c.limit } : {}),
    ...(c.limit && c.period && c.period !== "PERIOD_KIND_UNSPECIFIED" ? { period: c.period } : {}),
    ...(c.extension ? { extension: c.extension } : {}),
    ...(c.suspension ? { suspension: c.suspension } : {}),
    ...(c.perAuthorization ? { perAuthorization: c.perAuthorization } : {}),
    ...(c.maxAuthorizations ? { maxAuthorizations: c.maxAuthorizations } : {}),
  };
}

type Row = SpendControls | null | undefined;

/**
 * Sets the base limit and its period; suspension and extension stay. The period belongs to the
 * limit it denominates, so a new limit without a period drops the old one (it then inherits).
 * `caps`, when given (an administrator's SetLimit), replaces the row's cap per authorization and
 * count per window with the limit; without it (the caller's own SetLimit) the stored ones stay.
 */
export const withLimit = (controls: Row, limit: SpendLimit, period?: PeriodKind | null, caps?: Pick<SpendControls, "perAuthorization" | "maxAuthorizations">): SpendControls =>
  compact({ ...controls, limit, period: period ?? undefined, ...caps });

/** Drops the base limit and its period; extension, suspension and the caps stay. */
export const withoutLimit = (controls: Row): SpendControls => compact({ ...controls, limit: null, period: undefined });

/**
 * Suspends the row; the limit and extension stay, to be restored on unsuspend. Re-suspending
 * keeps the original `suspendedAt` (the freeze began then) and takes the new reason when one
 * is given, else keeps the old one.
 */
export function withSuspension(controls: Row, reason: string | undefined, now: number): SpendControls {
  const previous = controls?.suspension;
  const kept = reason ?? previous?.reason;
  return compact({
    ...controls,
    suspension: {
      ...(kept === undefined ? {} : { reason: kept }),
      suspendedAt: previous?.suspendedAt ?? new Date(now).toISOString(),
    },
  });
}

/** Lifts the suspension; the limit it froze was never erased, so it applies again. */
export const withoutSuspension = (controls: Row): SpendControls => compact({ ...controls, suspension: null });

/** Sets the extension; the period is the row's and never changes with it. */
export const withExtension = (controls: Row, extension: SpendExtension): SpendControls => compact({ ...controls, extension });

export const withoutExtension = (controls: Row): SpendControls => compact({ ...controls, extension: null });

/** Nothing left to state: the caller removes the row rather than keep an empty one. */
export const isEmpty = (controls: Row): boolean =>
  !controls || (!isSet(controls.limit) && !isSet(controls.extension) && !isSet(controls.suspension) && !isSet(controls.perAuthorization) && !isSet(controls.maxAuthorizations));

/** Equal as answers show them, so controls read and sent back (with their nulls and "") are the stored ones. */
export const sameControls = (a: Row, b: Row): boolean => canonicalJson(controlsView(a ?? {})) === canonicalJson(controlsView(b ?? {}));

/** An extension granted now must still be running: `expiresAt` strictly after `now`. */
export function requireFutureExpiry(extension: SpendExtension, now: number, path: string): SpendExtension {
  const expiresAt = extension.expiresAt ? Date.parse(extension.expiresAt) : Number.NaN;
  if (!(expiresAt > now)) throw invalidField(path, "must be in the future", "EXTENSION_EXPIRY_NOT_IN_FUTURE");
  return extension;
}

/**
 * Controls that replace a stored set as a whole (an app cap, the tenant default): validated as
 * `parseControls` does, then completed against what is stored.
 * - An extension must expire in the future, unless it equals the stored one, so a read-modify-write
 *   of a lapsed extension round-trips.
 * - `suspension.suspendedAt` is the server's: kept from the stored suspension, else now; a value
 *   sent is ignored.
 * The result may be empty; the caller decides what no control at all means.
 */
export function replaceControls(input: unknown, stored: Row, currencyCode: string, path: string, now: number): SpendControls {
  const parsed = parseControls(input, currencyCode, path, now);
  const { extension, suspension } = parsed;
  if (extension && canonicalJson(extensionView(extension)) !== canonicalJson(stored?.extension ? extensionView(stored.extension) : null)) {
    requireFutureExpiry(extension, now, `${path}.extension.expiresAt`);
  }
  return compact({
    ...parsed,
    suspension: suspension
      ? {
          ...(suspension.reason === undefined ? {} : { reason: suspension.reason }),
          suspendedAt: stored?.suspension?.suspendedAt ?? new Date(now).toISOString(),
        }
      : null,
  });
}

/**
 * The currency of the amounts a control set holds (base limit, extension, cap per authorization),
 * or null when it holds none. Every stored amount is in the fund currency, so one code describes the set; a set
 * holding two would be refused by the currency check and is reported by its first.
 */
export function amountCurrency(controls: Row): string | null {
  for (const limit of [controls?.limit, controls?.extension?.limit]) {
    const code = limit?.amount?.money?.currencyCode;
    if (code) return code;
  }
  return controls?.perAuthorization?.currencyCode ?? null;
}
