// What the floor server (./floor.ts) asks of its database, whichever it is: the three durable
// operations the targets are held against (issue 33), each the least an exact decision,
// capture or intake does, in one transaction (SQLite, ./floor-sqlite.ts) or one round trip
// (PostgreSQL, ./floor-postgres.ts). Money is in nanos (bigint), never a JS number.

/** An Authorize as the floor decides it; `key` is the request's Idempotency-Key. */
export interface FloorAuthorize {
  key: string;
  /** The new authorization's id (time-ordered), used unless the key was seen before. */
  id: string;
  userId: string;
  appId: string;
  currencyCode: string;
  amountNanos: bigint;
  /** The window the instant falls in (ISO start), and the instants stored. */
  windowStart: string;
  now: string;
  expiresAt: string;
}

export type FloorDecision =
  /** Decided now, or the same request's decision answered again (`replay`). */
  | { outcome: "decided"; id: string; approved: boolean; replay: boolean }
  /** The key was used for another request, or the currency is not the fund's. */
  | { outcome: "key-reused" | "wrong-currency" };

export type FloorCaptureOutcome = "captured" | "not-found" | "not-pending";

/** An accepted webhook event and the execution it enqueues. */
export interface FloorEvent {
  listenerId: string;
  eventId: string;
  executionId: string;
  /** The event's body, as the execution's context. */
  body: string;
  now: string;
}

/** What the bench seeds: the layers of the spend scenarios' apps, and the intake's listeners. */
export interface FloorSeed {
  currencyCode: string;
  /** Subject-app limits, nanos a window. */
  limits?: { userId: string; appId: string; limitNanos: bigint }[];
  listeners?: { path: string; listenerId: string; secret: string }[];
}

export interface FloorStore {
  authorize(a: FloorAuthorize): Promise<FloorDecision>;
  capture(id: string, ledgerId: string, now: string): Promise<FloorCaptureOutcome>;
  /** False when the listener already accepted this event id (a duplicate). */
  intake(e: FloorEvent): Promise<boolean>;
  /** The listener of a webhook path, with its secret; undefined when there is none. */
  listener(path: string): Promise<{ listenerId: string; secret: string } | undefined>;
  seed(s: FloorSeed): Promise<void>;
  /** Ids of authorizations in `state` of the user's apps starting with `appPrefix` (the capture scenario's), in the order they were made. */
  inState(userId: string, appPrefix: string, state: "PENDING" | "CAPTURED", count: number): Promise<string[]>;
  /** What a window's usage row holds, and the decisions made in it (the exactness test). */
  window(userId: string, appId: string): Promise<{ spentNanos: bigint; heldNanos: bigint; approved: number; declined: number; approvedNanos: bigint } | undefined>;
  close(): Promise<void>;
}

/** The start of the UTC month of `ms`, ISO: the monthly window of the bench's limits (the fund's time zone is UTC). */
export function monthStart(ms: number): string {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString();
}
