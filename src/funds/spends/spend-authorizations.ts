// Spend authorizations (SpendService): Authorize decides a spend against the limit in force and holds
// it (or records it at once), Simulate answers the decision Authorize would make without making it
// (on a read, writing nothing), Capture posts a hold, Release voids it, Reverse refunds a capture,
// Get answers one. Each write is made under its subject and app's lock, on the state under that
// lock: read after it, or on PostgreSQL read before it (or seen by the instance's last decision) and
// checked under it by the one call that writes. Authorize also holds the fund policy's lock shared, as every
// writer of an amount does. Why: docs/spends.md, "How a spend is decided and counted".
import type { components } from "../../../generated/api.js";
import type { Clock } from "../../core/clock.js";
import { BoundedMap } from "../../core/bounded-map.js";
import type { Origin } from "../../core/origin.js";
import { failedPrecondition, invalidField, notFound } from "../../core/errors.js";
import { timeOrderedId } from "../../core/ids.js";
import type { Storage } from "../../storage/connect.js";
import { writeStatement, writeTransaction, type BeforeCommit, type Db } from "../../storage/transactions.js";
import type { EffectiveLimits, Layers, LimitInForce } from "../effective.js";
import { spendChangeEvent, withFundEvents, type FundEventBatch, type FundEventRecorder, type FundEventType } from "../fund-events.js";
import { FUND_POLICY_LOCK } from "../fund-policy.js";
import { isSet } from "../guards.js";
import { parseMoney, toNanos } from "../money.js";
import { covers, requireApp, type SpendAccess } from "./spend-access.js";
import { decideSpend, type DeclineCause } from "./spend-decision.js";
import type { SpendObserver } from "./spend-observer.js";
import { ledgerEntry, type LedgerEntry } from "./spend-ledger.js";
import { answeredState, asAuthorizedIn, authorizationView, rowById, windowOf, type SpendAuthorization, type SpendRow, type StoredState } from "./spend-rows.js";
import { lockWindow, NOTHING_USED, unseededUsage, usageView, type SpendUsageView, type Usage, type WindowKey } from "./spend-usage.js";
import { authorizeInOneCall, changeInOneCall, lockedRow, recordAuthorization, recordChange, type ChangeWrites, type DecidedOn } from "./spend-writes.js";

type AuthorizeRequest = components["schemas"]["SpendServiceAuthorizeRequest"];
type SpendDecisionView = components["schemas"]["SpendDecision"];


/** An Authorize as the request asks it, validated but for its amount (whose currency is the policy's). */
interface DecisionRequest {
  userId: string;
  appId: string;
  amount: unknown;
  capture: boolean;
  holdSeconds: number;
  metadata: object;
}

/** A decision: the authorization to insert, its first ledger entry (none for a decline), its answer, the window's usage after it. */
interface Decision {
  created: SpendRow;
  entry: LedgerEntry | null;
  view: SpendAuthorization;
  after: Usage;
  cause: DeclineCause;
}

/** How many times a one-call decision is decided again on the usage its call found before the transaction decides it. */
const ONE_CALL_ATTEMPTS = 3;

/** What this process last decided a subject and app's spend on: the layers, and the window's usage after the decision. */
interface Seen {
  layers: Layers;
  window: WindowKey;
  usage: Usage;
}

/** The subjects and apps whose `Seen` a process keeps, and the characters of their layers' controls, the least recently decided forgotten first. */
const SEEN_LIMITS = { entries: 10_000, size: 4_000_000 };

/** What a one-call decision decides on, and the layers it is decided on as read (kept as `Seen` once recorded). */
interface Basis {
  force: LimitInForce;
  read: DecidedOn;
  layers: Layers;
}

/**
 * The request of an Authorize or a Simulate as `access` may make it, validated but for its amount
 * (whose currency is the policy's): 403 for an app outside `access`, 400 for a hold with a capture or
 * out of range.
 */
function decisionRequest(access: SpendAccess, body: AuthorizeRequest): DecisionRequest {
  const { userId, appId } = body;
  requireApp(access, appId);
  const capture = body.capture === true;
  if (capture && isSet(body.holdSeconds)) throw invalidField("body.holdSeconds", "must not be sent with capture true", "HOLD_WITH_CAPTURE");
  const holdSeconds = body.holdSeconds ?? DEFAULT_HOLD_SECONDS;
  if (!Number.isInteger(holdSeconds) || holdSeconds < 1) throw invalidField("body.holdSeconds", "must be >= 1");
  if (holdSeconds > MAX_HOLD_SECONDS) throw invalidField("body.holdSeconds", `must be <= ${MAX_HOLD_SECONDS}`);
  return { userId, appId, amount: body.amount, capture, holdSeconds, metadata: body.metadata ?? {} };
}

/** An outcome of `request` (pure): its stored state, the window's usage after it, and the decision as answered. */
interface Outcome {
  amount: bigint;
  state: StoredState;
  after: Usage;
  cause: DeclineCause;
  decision: SpendDecisionView;
}

/**
 * The outcome of `request` against the limit in force and the window's usage before it (pure):
 * Authorize's and Simulate's one decision. Throws for an amount not in the fund's currency or not
 * positive, and as decideSpend does.
 */
function outcome(request: DecisionRequest, force: LimitInForce, usage: Usage): Outcome {
  const amount = positiveAmount(request.amount, force.currencyCode);
  const verdict = decideSpend(force, usage, amount);
  const state: StoredState = !verdict.approved ? "DECLINED" : request.capture ? "CAPTURED" : "PENDING";
  const after = { spent: usage.spent + (state === "CAPTURED" ? amount : 0n), held: usage.held + (state === "PENDING" ? amount : 0n), count: usage.count + (verdict.approved ? 1n : 0n) };
  const decision = {
    approved: verdict.approved,
    cause: verdict.cause,
    scope: force.resolution.effective.scope,
    period: force.resolution.windowPeriod,
    trace: verdict.trace,
    usage: usageView(force, after),
  };
  return { amount, state, after, cause: verdict.cause, decision };
}

/** Decides `request` at `now` as `outcome` does, with the authorization it records (pure). */
function decide(request: DecisionRequest, force: LimitInForce, usage: Usage, now: number): Decision {
  const { amount, state, after, cause, decision } = outcome(request, force, usage);
  const { window } = force;
  const at = iso(now);
  const created: SpendRow = {
    id: timeOrderedId(now, 8),
    user_id: request.userId,
    app_id: request.appId,
    currency_code: force.currencyCode,
    amount,
    captured: state === "CAPTURED" ? amount : 0n,
    reversed: 0n,
    state,
    expires_at: state === "PENDING" ? iso(now + request.holdSeconds * 1000) : null,
    window_start: window.windowStart,
    window_end: window.windowEnd,
    decision: JSON.stringify(decision),
    metadata: JSON.stringify(request.metadata),
    created_at: at,
    updated_at: at,
  };
  const entry = state === "DECLINED" ? null : ledgerEntry(created.id, window, state === "PENDING" ? "HOLD" : "CAPTURE", amount, now);
  const view = authorizationView(created, created.created_at, { decision, metadata: request.metadata as SpendAuthorization["metadata"] });
  return { created, entry, view, after, cause };
}

/** A change as decided on an authorization's row at `now`: the row as it becomes and what that writes. */
type DecideChange = (row: SpendRow, now: number) => { row: SpendRow; writes: ChangeWrites | null };

/** How long an approved hold counts when the request does not say. */
export const DEFAULT_HOLD_SECONDS = 600;
const MAX_HOLD_SECONDS = 604_800;

const iso = (ms: number) => new Date(ms).toISOString();

/** The fund events a decision may cause, and those of a capture, release or reversal. */
const DECISION_EVENTS: readonly FundEventType[] = ["FUND_EVENT_TYPE_SPEND_AUTHORIZED", "FUND_EVENT_TYPE_SPEND_DECLINED", "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED"];
const CHANGE_EVENTS: readonly FundEventType[] = ["FUND_EVENT_TYPE_SPEND_CAPTURED", "FUND_EVENT_TYPE_SPEND_RELEASED", "FUND_EVENT_TYPE_SPEND_REVERSED"];

export class SpendAuthorizations {
  private readonly seen = new BoundedMap<string, Seen>(SEEN_LIMITS);

  constructor(
    private readonly storage: Storage,
    private readonly clock: Clock,
    private readonly effective: EffectiveLimits,
    private readonly observer?: SpendObserver,
    private readonly events?: FundEventRecorder,
  ) {}

  async authorize(access: SpendAccess, body: AuthorizeRequest, beforeCommit?: BeforeCommit<SpendAuthorization>, origin?: Origin): Promise<SpendAuthorization> {
    const request = decisionRequest(access, body);
    const { view, cause } = await withFundEvents(this.events, DECISION_EVENTS, async (events) => {
      if (!events && this.storage.dialect === "postgres") {
        const decided = await this.authorizeOnSnapshot(request, beforeCommit, origin);
        if (decided) return decided;
      }
      return this.authorizeInTransaction(request, events, beforeCommit, origin);
    });
    this.observer?.decided(view.decision.approved, cause);
    return view;
  }

  /**
   * The decision Authorize would make now for `body`, and the window's usage now, writing nothing:
   * the layers and the usage read without a lock in one statement (GetEffective's), a window without
   * its row yet summed without creating it, then Authorize's own decision on them.
   */
  async simulate(access: SpendAccess, body: AuthorizeRequest): Promise<{ decision: SpendDecisionView; usage: SpendUsageView }> {
    const request = decisionRequest(access, body);
    const now = this.clock.now();
    const { force, usage } = await this.effective.snapshot(request.userId, request.appId, now, true);
    const before = usage ?? (await unseededUsage(this.storage.db, force.window, iso(now)));
    const { decision } = outcome(request, force, before);
    return { decision, usage: usageView(force, before) };
  }

  /**
   * PostgreSQL, without fund events to record: the decision on the kept policy and on the layers and
   * the window's usage this process last decided the subject and app's spend on (one round trip), or
   * else read without a lock (one statement, then the call); recorded in one call if under the locks
   * the policy, the layers and the usage are still those; decided again on the usage as it is then,
   * a few times, and on a read of the layers when they changed. A lock held: the same calls in a
   * transaction that waits for it (BEGIN with the first). Undefined when the policy changed, when the
   * usage kept changing, when the decision is refused on what was read (refused again, or not, under
   * the locks), or when the answer is kept by a statement of its own (a claimed key): the
   * transaction decides it then. What was seen is only a guess at what is: every part of it is
   * checked under the locks, so that another instance's decisions and changes cost a call more, never
   * an inexact decision.
   */
  private async authorizeOnSnapshot(request: DecisionRequest, beforeCommit: BeforeCommit<SpendAuthorization> | undefined, origin: Origin | undefined): Promise<Decision | undefined> {
    if (beforeCommit && !beforeCommit.asWrite) return undefined;
    const now = this.clock.now();
    const key = `${request.userId}\u0000${request.appId}`;
    let basis = await this.basis(key, request, now, true);
    let decided = await this.decideInOneCall(request, basis, now, beforeCommit, origin);
    // The layers changed since this process saw them: decided again on a read of them.
    if (decided === "layers") decided = await this.decideInOneCall(request, (basis = await this.basis(key, request, now, false)), now, beforeCommit, origin);
    if (decided === undefined || decided === "layers") {
      this.seen.delete(key);
      return undefined;
    }
    const { row_controls, cap_controls } = basis.layers;
    this.seen.set(key, { layers: basis.layers, window: basis.force.window, usage: decided.after }, (row_controls?.length ?? 0) + (cap_controls?.length ?? 0));
    return decided;
  }

  /**
   * What a one-call decision of `key` at `now` decides on: with `seen`, what this process last saw
   * of the subject and app (the layers, and the usage its last decision left), when the window in
   * force on them is still that one, and the call checks the layers too; else the layers and the
   * usage read without a lock in one statement.
   */
  private async basis(key: string, request: DecisionRequest, now: number, seen: boolean): Promise<Basis> {
    const last = seen ? this.seen.touch(key) : undefined;
    if (last) {
      const { force, policy } = await this.effective.onLayers(last.layers, request.userId, request.appId, now);
      if (force.window.windowStart === last.window.windowStart && force.window.windowEnd === last.window.windowEnd) {
        return { force, layers: last.layers, read: { policy, usage: last.usage, layers: { row: last.layers.row_controls, cap: last.layers.cap_controls } } };
      }
    }
    const { force, usage, policy, layers } = await this.effective.snapshot(request.userId, request.appId, now, true);
    // A window without its row yet most often has no spends (its first decision): the call seeds the row and checks.
    return { force, layers, read: { policy, usage: usage ?? NOTHING_USED } };
  }

  /** The calls of a decision on `basis`; a lock held, the same calls in a transaction, which waits for it. */
  private async decideInOneCall(request: DecisionRequest, basis: Basis, now: number, beforeCommit: BeforeCommit<SpendAuthorization> | undefined, origin: Origin | undefined): Promise<Decision | undefined | "layers"> {
    const calls = (db: Db) => this.decideByCalls(db, request, basis.force, basis.read, now, beforeCommit);
    const decided = await writeStatement(this.storage, calls, origin);
    if (decided !== "busy") return decided;
    const waited = await writeTransaction(this.storage, { exclusive: [] }, calls, { origin });
    return waited === "busy" ? undefined : waited;
  }

  /** authorizeOnSnapshot's calls on `db`, each decided on the usage the one before found: "busy" when one found a lock held (in autocommit). */
  private async decideByCalls(db: Db, request: DecisionRequest, force: LimitInForce, read: DecidedOn, now: number, beforeCommit: BeforeCommit<SpendAuthorization> | undefined): Promise<Decision | undefined | "busy" | "layers"> {
    let { usage } = read;
    for (let attempt = 0; attempt < ONE_CALL_ATTEMPTS; attempt++) {
      let decided: Decision;
      try {
        decided = decide(request, force, usage, now);
      } catch {
        return undefined;
      }
      const result = await authorizeInOneCall(db, FUND_POLICY_LOCK, { ...read, usage }, decided.created, decided.entry, beforeCommit?.asWrite?.(decided.view));
      if (result.outcome === "recorded") return decided;
      if (result.outcome === "policy") return undefined;
      if (result.outcome === "busy" || result.outcome === "layers") return result.outcome;
      usage = result.usage;
    }
    return undefined;
  }

  /** The decision in a transaction: the policy and the layers read under the policy's shared lock, the usage under the window's lock, with its fund events. */
  private authorizeInTransaction(request: DecisionRequest, events: FundEventBatch | undefined, beforeCommit: BeforeCommit<SpendAuthorization> | undefined, origin: Origin | undefined): Promise<Decision> {
    return writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      const now = this.clock.now();
      // The user's existence (404 USER_NOT_FOUND), the policy and the layers in one read, after the
      // policy's shared lock (the currency stays until commit; taken with the read, one round trip)
      // and before the window's.
      const force = await this.effective.inForce(db, request.userId, request.appId, now, true, FUND_POLICY_LOCK);
      // The amount's currency before the window's lock.
      positiveAmount(request.amount, force.currencyCode);
      // The lock, then the usage it protects.
      const usage = await lockWindow(db, this.storage.dialect, force.window, iso(now));
      const decided = decide(request, force, usage, now);
      const { created, entry, view, after } = decided;
      await recordAuthorization(this.storage, db, created, entry, view, beforeCommit);
      if (events) {
        const { userId, appId } = request;
        const occurredAt = view.createdAt;
        await events.record(db, [{ type: view.decision.approved ? "FUND_EVENT_TYPE_SPEND_AUTHORIZED" : "FUND_EVENT_TYPE_SPEND_DECLINED", occurredAt, userId, appId, authorization: view }]);
        if (view.decision.approved) await events.usage(db, { authorization: view, occurredAt, used: after.spent + after.held, limit: force.limit });
      }
      return decided;
    }, { origin });
  }

  async get(access: SpendAccess, id: string): Promise<SpendAuthorization> {
    const row = await this.visibleRow(access, id);
    return authorizationView(row, iso(this.clock.now()));
  }

  /** The authorization as Authorize answered it when it was decided (a replay's answer), whatever happened to it since. */
  asAuthorized(id: string): Promise<SpendAuthorization> {
    return asAuthorizedIn(this.storage.db, id);
  }

  /** Posts all of a pending hold, or `body.amount` of it (the rest is released). */
  async capture(access: SpendAccess, id: string, body: { amount?: unknown }, beforeCommit?: BeforeCommit<SpendAuthorization>, origin?: Origin): Promise<SpendAuthorization> {
    const found = await this.visibleRow(access, id);
    const requested = isSet(body.amount) ? positiveAmount(body.amount, found.currency_code) : undefined;
    return this.change(found, (row, now) => {
      const state = answeredState(row, iso(now));
      if (state !== "SPEND_AUTHORIZATION_STATE_PENDING") {
        throw failedPrecondition("AUTHORIZATION_NOT_PENDING", "only a pending authorization can be captured", { metadata: { state } });
      }
      const captured = requested ?? row.amount;
      if (captured > row.amount) throw invalidField("body.amount", "must not exceed the authorized amount", "AMOUNT_EXCEEDS_HOLD");
      const entries: ChangeWrites["entries"] = [{ kind: "CAPTURE", amount: captured }];
      if (captured < row.amount) entries.push({ kind: "RELEASE", amount: row.amount - captured });
      return { row: { ...row, state: "CAPTURED", captured, updated_at: iso(now) }, writes: { set: { state: "CAPTURED", captured }, entries, spent: captured } };
    }, beforeCommit, origin);
  }

  /** Voids a pending hold; a released one is answered as it is. */
  async release(access: SpendAccess, id: string, beforeCommit?: BeforeCommit<SpendAuthorization>, origin?: Origin): Promise<SpendAuthorization> {
    const found = await this.visibleRow(access, id);
    return this.change(found, (row, now) => {
      const state = answeredState(row, iso(now));
      if (state === "SPEND_AUTHORIZATION_STATE_RELEASED") return { row, writes: null };
      if (state !== "SPEND_AUTHORIZATION_STATE_PENDING") {
        throw failedPrecondition("AUTHORIZATION_NOT_PENDING", "only a pending authorization can be released", { metadata: { state } });
      }
      return {
        row: { ...row, state: "RELEASED", updated_at: iso(now) },
        writes: { set: { state: "RELEASED" }, entries: [{ kind: "RELEASE", amount: row.amount }], spent: 0n },
      };
    }, beforeCommit, origin);
  }

  /** Refunds all of what a capture has not yet had reversed, or `body.amount` of it, in the capture's own window. */
  async reverse(access: SpendAccess, id: string, body: { amount?: unknown }, beforeCommit?: BeforeCommit<SpendAuthorization>, origin?: Origin): Promise<SpendAuthorization> {
    const found = await this.visibleRow(access, id);
    const requested = isSet(body.amount) ? positiveAmount(body.amount, found.currency_code) : undefined;
    return this.change(found, (row, now) => {
      const state = answeredState(row, iso(now));
      if (state !== "SPEND_AUTHORIZATION_STATE_CAPTURED") {
        throw failedPrecondition("AUTHORIZATION_NOT_CAPTURED", "only a captured authorization can be reversed", { metadata: { state } });
      }
      const remainder = row.captured - row.reversed;
      if (remainder === 0n) throw failedPrecondition("NOTHING_TO_REVERSE", "the captured amount is already reversed in full");
      const reversal = requested ?? remainder;
      if (reversal > remainder) throw invalidField("body.amount", "must not exceed the captured amount not yet reversed", "AMOUNT_EXCEEDS_CAPTURED");
      const reversed = row.reversed + reversal;
      return {
        row: { ...row, reversed, updated_at: iso(now) },
        writes: { set: { reversed }, entries: [{ kind: "REVERSAL", amount: reversal }], spent: -reversal },
      };
    }, beforeCommit, origin);
  }

  /**
   * A change of one authorization under its window's lock, decided on the row as it is under the
   * lock: the state seen before it may have changed (a concurrent capture, release or reversal).
   * `decide` answers the row as it becomes and what that writes.
   */
  private async change(
    found: SpendRow,
    decide: DecideChange,
    beforeCommit?: BeforeCommit<SpendAuthorization>,
    origin?: Origin,
  ): Promise<SpendAuthorization> {
    return withFundEvents(this.events, CHANGE_EVENTS, async (events) => {
      if (!events && this.storage.dialect === "postgres") {
        const answered = await this.changeOnRead(found, decide, beforeCommit, origin);
        if (answered) return answered;
      }
      return this.changeInTransaction(found, decide, events, beforeCommit, origin);
    });
  }

  /**
   * PostgreSQL, without fund events to record: the change decided on `found` and written in one
   * round trip, if the lock is free and the row is still `found` under it. Undefined when it is
   * not, when the change is refused or writes nothing, or when the answer is kept by a statement
   * of its own (a claimed key): the transaction decides it then, on the row read under the lock.
   */
  private async changeOnRead(
    found: SpendRow,
    decide: DecideChange,
    beforeCommit?: BeforeCommit<SpendAuthorization>,
    origin?: Origin,
  ): Promise<SpendAuthorization | undefined> {
    if (beforeCommit && !beforeCommit.asWrite) return undefined;
    const now = this.clock.now();
    let decided: ReturnType<DecideChange>;
    try {
      decided = decide(found, now);
    } catch {
      // Refused on a row that may be stale: refused again, or not, on the row under the lock.
      return undefined;
    }
    const { row, writes } = decided;
    if (!writes) return undefined;
    const answer = authorizationView(row, iso(now));
    return (await changeInOneCall(this.storage, found, row, writes, now, beforeCommit?.asWrite?.(answer), origin)) ? answer : undefined;
  }

  /** The change in a transaction, decided on the row as it is under the window's lock, with its fund events. */
  private changeInTransaction(
    found: SpendRow,
    decide: DecideChange,
    events: FundEventBatch | undefined,
    beforeCommit?: BeforeCommit<SpendAuthorization>,
    origin?: Origin,
  ): Promise<SpendAuthorization> {
    return writeTransaction(this.storage, { exclusive: [] }, async (db) => {
      const current = await lockedRow(this.storage, db, windowOf(found), found.id);
      const now = this.clock.now();
      if (!current) throw new Error(`spend authorization ${found.id} vanished`);
      const { row, writes } = decide(current, now);
      const answer = authorizationView(row, iso(now));
      await recordChange(this.storage, db, row, writes, now, answer, beforeCommit);
      const event = events && writes && spendChangeEvent(answer, writes.entries[0]);
      if (event) await events.record(db, [event]);
      return answer;
    }, { origin });
  }

  /** The authorization if `access` may see it, else 404 as if it did not exist. */
  private async visibleRow(access: SpendAccess, id: string): Promise<SpendRow> {
    const row = await rowById(this.storage.db, id);
    if (!row || !covers(access, row.user_id, row.app_id)) {
      throw notFound("AUTHORIZATION_NOT_FOUND", "no spend authorization with this id", { metadata: { authorizationId: id } });
    }
    return row;
  }
}

/** A Money of the fund currency greater than zero, in nanos. */
function positiveAmount(input: unknown, currencyCode: string): bigint {
  const nanos = toNanos(parseMoney(input, currencyCode, "body.amount"));
  if (nanos === 0n) throw invalidField("body.amount", "must be greater than zero", "AMOUNT_NOT_POSITIVE");
  return nanos;
}
