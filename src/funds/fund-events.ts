// Fund events: what the funds code tells the automations of the changes it makes (a spend decided
// or changed, a window's usage at a threshold, a limit row suspended, unsuspended or changed),
// recorded in the change's transaction through this port, which automations/fund-triggers.ts
// implements. A change asks for a batch before its transaction, naming the event types it may
// cause: with no trigger listening to them there is none, and it costs nothing more.
// docs/automations.md, "Automations on fund events".
import type { components } from "../../generated/api.js";
import type { KnownFundEventType } from "../../generated/enums.js";
import type { Db } from "../storage/transactions.js";
import { fromNanos } from "./money.js";
import type { LedgerKind } from "./spends/spend-ledger.js";

export type FundEvent = components["schemas"]["FundEvent"];
export type FundEventType = KnownFundEventType;

/** An event as the change describes it: the recorder adds its id, depth and cause. */
export type FundEventFacts = Omit<FundEvent, "id" | "depth" | "causedBy" | "type" | "authorization" | "amount" | "usageThreshold" | "limitChange"> &
  Partial<Pick<FundEvent, "authorization" | "amount" | "limitChange">> & { type: Exclude<FundEventType, "FUND_EVENT_TYPE_USAGE_THRESHOLD_CROSSED" | "FUND_EVENT_TYPE_UNSPECIFIED"> };

/** An approved spend's window after it: the usage thresholds it may have reached. */
export interface UsageAfterSpend {
  authorization: components["schemas"]["SpendAuthorization"];
  occurredAt: string;
  /** `spent + held` of the window after the spend, in nanos. */
  used: bigint;
  /** The window's amount limit in nanos; null when no amount limit is in force (nothing to cross). */
  limit: bigint | null;
}

export interface FundEventBatch {
  /** Whether a trigger listens to `type` (so that the change builds the event only then). */
  wants(type: FundEventType): boolean;
  /** In the change's transaction: records the events, as executions of the automations they start. */
  record(db: Db, events: readonly FundEventFacts[]): Promise<void>;
  /** In the spend's transaction, under its window's lock: fires the usage thresholds it reached, once each. */
  usage(db: Db, after: UsageAfterSpend): Promise<void>;
  /** Once the transaction committed. */
  committed(): void;
}

export interface FundEventRecorder {
  /**
   * Before the change's transaction: a batch for its events, or undefined when no trigger listens
   * to any of `types`. `outer`: the transaction the change joins (an automation step's), read
   * through instead of the storage's pool.
   */
  open(types: readonly FundEventType[], outer?: Db): Promise<FundEventBatch | undefined>;
}

/** Runs `change` (which runs the transaction) with a batch for its events, told of the commit. */
export async function withFundEvents<T>(
  recorder: FundEventRecorder | undefined,
  types: readonly FundEventType[],
  change: (batch: FundEventBatch | undefined) => Promise<T>,
  outer?: Db,
): Promise<T> {
  const batch = await recorder?.open(types, outer);
  const result = await change(batch);
  batch?.committed();
  return result;
}

const CHANGE_TYPES: Partial<Record<LedgerKind, FundEventFacts["type"]>> = {
  CAPTURE: "FUND_EVENT_TYPE_SPEND_CAPTURED",
  RELEASE: "FUND_EVENT_TYPE_SPEND_RELEASED",
  REVERSAL: "FUND_EVENT_TYPE_SPEND_REVERSED",
};

/**
 * The event of a change of an authorization (answered as `authorization`), from its first ledger
 * entry: a capture's (a partial capture's release of the rest is part of it), a release's or a
 * reversal's, with the amount it moved.
 */
export function spendChangeEvent(authorization: FundEvent["authorization"] & object, first: { kind: LedgerKind; amount: bigint } | undefined): FundEventFacts | undefined {
  const type = first && CHANGE_TYPES[first.kind];
  if (!first || !type) return undefined;
  const { userId, appId, updatedAt } = authorization;
  return { type, occurredAt: updatedAt, userId, appId, authorization, amount: fromNanos(first.amount, authorization.amount.currencyCode) };
}
