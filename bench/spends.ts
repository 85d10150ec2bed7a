// The spend scenarios of issue 15: what they send, their setup, the POST baseline they are held
// against, and the overspend check read straight from the database after them.
import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import type { Storage } from "../src/storage/connect.js";
import type { Api } from "./api.js";
import type { RequestSpec } from "./load.js";
import type { SpendCheck } from "./report.js";

export const SPEND_APPS = 100;
export const AUTHORIZE_PATH = "/api/v1/funds/spend-authorizations";
const NANOS = 1_000_000_000n;
/** The approved scenario's apps: a limit no run reaches (10,000,000.00 a month, 1.00 a spend). */
const OPEN_LIMIT_UNITS = 10_000_000n;
/** The declined scenario's apps: 5.00 a month, so that each app approves exactly five spends of 1.00 and declines every other. */
const TIGHT_LIMIT_UNITS = 5n;

/** The Authorize body: a spend of 1.00 by app `<prefix>-{k}` (k over the apps), held, or with `capture` spent at once. */
export const authorizeBody = (userId: string, prefix: string, capture = false) =>
  JSON.stringify({ userId, appId: `${prefix}-{k}`, amount: { currencyCode: "USD", units: "1", nanos: 0 }, ...(capture ? { capture: true } : {}), metadata: { orderId: "bench" } });

/** An Authorize per request, a fresh Idempotency-Key each, over the apps `<prefix>-0..99`. */
export const authorizeRequest = (userId: string, prefix: string, headers: Record<string, string>): RequestSpec => ({ kind: "varying", method: "POST", path: AUTHORIZE_PATH, headers, body: authorizeBody(userId, prefix), keys: SPEND_APPS, freshIdempotencyKey: true });

/** The POST baseline: the same body (a user id of the same length) and a fresh Idempotency-Key, to a bare `express.json()` route. */
export const spendPostBaseline = (): RequestSpec => ({ kind: "varying", method: "POST", path: "/", headers: { "Content-Type": "application/json" }, body: authorizeBody("0123456789abcdef", "spend"), keys: SPEND_APPS, freshIdempotencyKey: true });

/** The spender's monthly limits, in units: `spend-*` (open) and `decline-*` (tight), the floor's as the server's. */
export const spendLimits = (): { appId: string; units: bigint }[] =>
  Array.from({ length: SPEND_APPS }, (_, k) => [
    { appId: `spend-${k}`, units: OPEN_LIMIT_UNITS },
    { appId: `decline-${k}`, units: TIGHT_LIMIT_UNITS },
  ]).flat();

/**
 * A cap on one authorization and a count per window on every spend row, above the bench's amounts
 * and counts: their checks (and the count's upkeep) are paid for, never decide.
 */
const PER_AUTHORIZATION_CAP = { currencyCode: "USD", units: "1000", nanos: 0 };
const MAX_AUTHORIZATIONS = 1_000_000;

/** The subject of the spends, with its `spendLimits` (and `PER_AUTHORIZATION_CAP`, `MAX_AUTHORIZATIONS`). */
export async function setUpSpends(api: Api): Promise<string> {
  const spender = await api.createUser("Bench spender", "bench-spender@bench.example");
  for (const { appId, units } of spendLimits()) {
    await api.call("POST", `/api/v1/funds/subject-app-limits/${spender}/${appId}/limit`, { limit: { amount: { money: { currencyCode: "USD", units: String(units), nanos: 0 } } }, period: "PERIOD_KIND_MONTHLY", perAuthorization: PER_AUTHORIZATION_CAP, maxAuthorizations: MAX_AUTHORIZATIONS });
  }
  return spender;
}

/** The states a scenario changes: pending holds (Capture, Release), captures with nothing reversed yet (Reverse). */
export type ChangeableState = "PENDING" | "CAPTURED";

/** Where the change scenarios' authorizations come from: a server's, and its Authorize to make more. */
export interface Authorizations {
  /** Up to `count` of the spender's open apps' authorizations in `state`, none of it reversed. */
  inState(state: ChangeableState, count: number): Promise<string[]>;
  origin: string;
  headers: Record<string, string>;
}

/** The server's authorizations of the spender's open apps, read from its database. */
export const serverAuthorizations = (storage: Storage, api: Api, spender: string): Authorizations => ({
  inState: async (state, count) =>
    (
      await storage.db
        .selectFrom("spend_authorizations")
        .select("id")
        .where("user_id", "=", spender)
        .where("app_id", "like", "spend-%")
        .where("state", "=", state)
        .where(sql<boolean>`reversed_nanos = 0`)
        // A hold past its expiry is answered EXPIRED and refused a capture or a release (409): the
        // round trips are counted many minutes after the scenarios that left these holds, beyond the
        // default hold's 600 s. A minute's margin for the change scenario or the count that takes them.
        .$if(state === "PENDING", (q) => q.where("expires_at", ">", new Date(Date.now() + 60_000).toISOString()))
        // In the order they were made, apps interleaved as the floor's are: an order by app (the held
        // index's) would send the connections' changes to one subject and app at a time, to wait on its lock.
        .orderBy("id")
        .limit(count)
        .execute()
    ).map((r) => r.id),
  origin: api.origin,
  headers: api.headers,
});

/**
 * `count` authorizations of the open apps in `state` for a change scenario: those the earlier
 * scenarios left, topped up through Authorize (20 at a time; captured at once for CAPTURED) when
 * they left fewer.
 */
export async function authorizationsToChange(source: Authorizations, spender: string, state: ChangeableState, count: number): Promise<string[]> {
  let ids = await source.inState(state, count);
  let k = 0;
  const missing = count - ids.length;
  await Promise.all(
    Array.from({ length: 20 }, async (_, w) => {
      for (let i = w; i < missing; i += 20) {
        const body = authorizeBody(spender, "spend", state === "CAPTURED").replace("{k}", String(k++ % SPEND_APPS));
        const r = await fetch(source.origin + AUTHORIZE_PATH, { method: "POST", headers: { ...source.headers, "Idempotency-Key": randomUUID() }, body });
        if (r.status !== 200) throw new Error(`Authorize answered ${r.status}: ${await r.text()}`);
      }
    }),
  );
  if (missing > 0) ids = await source.inState(state, count);
  return ids;
}

interface Row {
  id: string;
  app_id: string;
  state: string;
  amount: string;
  captured: string;
  reversed: string;
  expires_at: string | null;
  window_start: string;
  window_end: string;
  decision: string;
}

interface Usage {
  spent: { units: string; nanos: number };
  held: { units: string; nanos: number };
  limit: { units: string; nanos: number } | null;
}

const nanos = (m: { units: string; nanos: number }): bigint => BigInt(m.units) * NANOS + BigInt(m.nanos);

/**
 * Every decision of the spender, read straight from the database: each approved decision's usage
 * (just after it) within its limit; each window's final spent + unexpired holds within its limit;
 * each tight app approving no more spends of 1.00 than its limit holds, and declining none before.
 */
export async function checkSpends(storage: Storage, spender: string, nowMs: number): Promise<SpendCheck> {
  const rows = (await storage.db
    .selectFrom("spend_authorizations")
    .select(["id", "app_id", "state", "expires_at", "window_start", "window_end", "decision"])
    .select([sql<string>`cast(amount_nanos as text)`.as("amount"), sql<string>`cast(captured_nanos as text)`.as("captured"), sql<string>`cast(reversed_nanos as text)`.as("reversed")])
    .where("user_id", "=", spender)
    .execute()) as Row[];
  const check: SpendCheck = { approved: 0, declined: 0, captured: 0, windows: 0, overspent: 0, wronglyDeclined: 0, samples: [] };
  const over = (what: string) => {
    check.overspent++;
    if (check.samples.length < 3) check.samples.push(what);
  };
  const windows = new Map<string, { used: bigint; approved: number; declined: number; limit: bigint }>();
  const now = new Date(nowMs).toISOString();
  for (const r of rows) {
    const decision = JSON.parse(r.decision) as { approved: boolean; usage: Usage };
    const limit = (r.app_id.startsWith("decline-") ? TIGHT_LIMIT_UNITS : OPEN_LIMIT_UNITS) * NANOS;
    const w = windows.get(`${r.app_id} ${r.window_start} ${r.window_end}`) ?? { used: 0n, approved: 0, declined: 0, limit };
    windows.set(`${r.app_id} ${r.window_start} ${r.window_end}`, w);
    if (!decision.approved) {
      check.declined++;
      w.declined++;
      continue;
    }
    check.approved++;
    w.approved++;
    if (r.state === "CAPTURED") check.captured++;
    const used = nanos(decision.usage.spent) + nanos(decision.usage.held);
    if (!decision.usage.limit || nanos(decision.usage.limit) !== limit || used > limit) over(`${r.id} approved at ${JSON.stringify(decision.usage)}`);
    w.used += BigInt(r.captured) - BigInt(r.reversed) + (r.state === "PENDING" && r.expires_at !== null && r.expires_at > now ? BigInt(r.amount) : 0n);
  }
  for (const [key, w] of windows) {
    check.windows++;
    if (w.used > w.limit) over(`window ${key}: ${w.used} nanos used of ${w.limit}`);
    if (key.startsWith("decline-") && w.approved > Number(TIGHT_LIMIT_UNITS)) over(`window ${key}: ${w.approved} spends of 1.00 approved against a limit of ${TIGHT_LIMIT_UNITS}.00`);
    if (key.startsWith("decline-") && w.approved < Number(TIGHT_LIMIT_UNITS) && w.declined > 0) {
      check.wronglyDeclined++;
      if (check.samples.length < 3) check.samples.push(`window ${key}: declined with ${w.approved} of ${TIGHT_LIMIT_UNITS} spends of 1.00 approved`);
    }
  }
  return check;
}
