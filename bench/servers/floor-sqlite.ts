// The floor on SQLite (issue 33): each operation one write transaction (BEGIN IMMEDIATE, which
// takes the database's write lock, as the server's transactions do), its statements prepared once,
// run synchronously by better-sqlite3 with the server's durability (WAL, synchronous=NORMAL:
// src/storage/connect.ts). One transaction per request: the server's group commit
// (src/storage/sqlite-group-commit.ts) is not copied, so the floor pays a COMMIT per request.
import SQLite from "better-sqlite3";
import { FLOOR_TABLES, FLOOR_TENANT } from "./floor-schema.js";
import type { FloorAuthorize, FloorCaptureOutcome, FloorDecision, FloorEvent, FloorSeed, FloorStore } from "./floor-store.js";

/** The least of the layers' limits in force, null when none is (nothing may be spent). */
const leastLimit = (limits: readonly (bigint | null)[]): bigint | null => limits.reduce<bigint | null>((least, l) => (l === null ? least : least === null || l < least ? l : least), null);

export function openFloorSqlite(path: string): FloorStore {
  const db = new SQLite(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  // Nanos pass 2^53 (10,000,000.00 is 10^16): every integer is read as a bigint.
  db.defaultSafeIntegers(true);
  for (const statement of FLOOR_TABLES) db.exec(statement);

  const s = {
    layers: db.prepare<[string, string, string, string]>(
      `select p.currency_code, p.limit_nanos as fund, c.cap_nanos as cap, l.limit_nanos as subject
       from fund_policy p left join app_caps c on c.app_id = ? left join subject_app_limits l on l.user_id = ? and l.app_id = ?
       where p.tenant_id = ?`,
    ),
    claimKey: db.prepare<[string, string]>("insert into idempotency_records (key, authorization_id) values (?, ?) on conflict (key) do nothing"),
    replay: db.prepare<[string]>("select a.id, a.state, a.user_id, a.app_id, a.amount_nanos from idempotency_records k join spend_authorizations a on a.id = k.authorization_id where k.key = ?"),
    usage: db.prepare<[string, string, string]>("select spent_nanos, held_nanos from spend_usage where user_id = ? and app_id = ? and window_start = ?"),
    newUsage: db.prepare<[string, string, string]>("insert into spend_usage (user_id, app_id, window_start) values (?, ?, ?)"),
    insertAuthorization: db.prepare<[string, string, string, string, bigint, string, string | null, string]>(
      "insert into spend_authorizations (id, user_id, app_id, window_start, amount_nanos, captured_nanos, state, expires_at, created_at) values (?, ?, ?, ?, ?, 0, ?, ?, ?)",
    ),
    hold: db.prepare<[bigint, string, string, string]>("update spend_usage set held_nanos = held_nanos + ? where user_id = ? and app_id = ? and window_start = ?"),
    authorization: db.prepare<[string]>("select user_id, app_id, window_start, amount_nanos, state, expires_at from spend_authorizations where id = ?"),
    captured: db.prepare<[string, string]>("update spend_authorizations set state = 'CAPTURED', captured_nanos = amount_nanos where id = ? and state = ?"),
    spend: db.prepare<[bigint, bigint, string, string, string]>("update spend_usage set spent_nanos = spent_nanos + ?, held_nanos = held_nanos - ? where user_id = ? and app_id = ? and window_start = ?"),
    ledger: db.prepare<[string, string, bigint, string]>("insert into spend_ledger (id, authorization_id, kind, amount_nanos, at) values (?, ?, 'CAPTURE', ?, ?)"),
    event: db.prepare<[string, string, string, string]>("insert into webhook_events (listener_id, event_id, received_at, execution_id) values (?, ?, ?, ?) on conflict do nothing"),
    execution: db.prepare<[string, string, string, string, string]>("insert into automation_executions (id, listener_id, event_id, state, context, created_at) values (?, ?, ?, 'PENDING', ?, ?)"),
    listener: db.prepare<[string]>("select listener_id, secret from webhook_listeners where path = ?"),
  };

  type Layers = { currency_code: string; fund: bigint | null; cap: bigint | null; subject: bigint | null };
  const authorize = db.transaction((a: FloorAuthorize): FloorDecision => {
    const layers = s.layers.get(a.appId, a.userId, a.appId, FLOOR_TENANT) as Layers | undefined;
    if (!layers || layers.currency_code !== a.currencyCode) return { outcome: "wrong-currency" };
    if (s.claimKey.run(a.key, a.id).changes === 0) {
      const kept = s.replay.get(a.key) as { id: string; state: string; user_id: string; app_id: string; amount_nanos: bigint };
      const same = kept.user_id === a.userId && kept.app_id === a.appId && kept.amount_nanos === a.amountNanos;
      return same ? { outcome: "decided", id: kept.id, approved: kept.state !== "DECLINED", replay: true } : { outcome: "key-reused" };
    }
    let usage = s.usage.get(a.userId, a.appId, a.windowStart) as { spent_nanos: bigint; held_nanos: bigint } | undefined;
    if (!usage) {
      s.newUsage.run(a.userId, a.appId, a.windowStart);
      usage = { spent_nanos: 0n, held_nanos: 0n };
    }
    const limit = leastLimit([layers.subject, layers.cap, layers.fund]);
    const approved = limit !== null && limit - usage.spent_nanos - usage.held_nanos >= a.amountNanos;
    s.insertAuthorization.run(a.id, a.userId, a.appId, a.windowStart, a.amountNanos, approved ? "PENDING" : "DECLINED", approved ? a.expiresAt : null, a.now);
    if (approved) s.hold.run(a.amountNanos, a.userId, a.appId, a.windowStart);
    return { outcome: "decided", id: a.id, approved, replay: false };
  });

  const capture = db.transaction((id: string, ledgerId: string, now: string): FloorCaptureOutcome => {
    const row = s.authorization.get(id) as { user_id: string; app_id: string; window_start: string; amount_nanos: bigint; state: string; expires_at: string | null } | undefined;
    if (!row) return "not-found";
    if (row.state !== "PENDING" || row.expires_at === null || row.expires_at <= now) return "not-pending";
    s.captured.run(id, "PENDING");
    s.spend.run(row.amount_nanos, row.amount_nanos, row.user_id, row.app_id, row.window_start);
    s.ledger.run(ledgerId, id, row.amount_nanos, now);
    return "captured";
  });

  const intake = db.transaction((e: FloorEvent): boolean => {
    if (s.event.run(e.listenerId, e.eventId, e.now, e.executionId).changes === 0) return false;
    s.execution.run(e.executionId, e.listenerId, e.eventId, e.body, e.now);
    return true;
  });

  const seed = db.transaction((seeded: FloorSeed) => {
    db.prepare("insert into fund_policy (tenant_id, currency_code, limit_nanos) values (?, ?, null) on conflict (tenant_id) do update set currency_code = excluded.currency_code").run(FLOOR_TENANT, seeded.currencyCode);
    const limit = db.prepare("insert into subject_app_limits (user_id, app_id, limit_nanos) values (?, ?, ?) on conflict (user_id, app_id) do update set limit_nanos = excluded.limit_nanos");
    for (const l of seeded.limits ?? []) limit.run(l.userId, l.appId, l.limitNanos);
    const listener = db.prepare("insert into webhook_listeners (path, listener_id, secret) values (?, ?, ?) on conflict (path) do update set secret = excluded.secret");
    for (const l of seeded.listeners ?? []) listener.run(l.path, l.listenerId, l.secret);
  });

  return {
    authorize: async (a) => authorize.immediate(a),
    capture: async (id, ledgerId, now) => capture.immediate(id, ledgerId, now),
    intake: async (e) => intake.immediate(e),
    listener: async (path) => {
      const row = s.listener.get(path) as { listener_id: string; secret: string } | undefined;
      return row && { listenerId: row.listener_id, secret: row.secret };
    },
    seed: async (seeded) => void seed.immediate(seeded),
    inState: async (userId, appPrefix, state, count) =>
      (db.prepare("select id from spend_authorizations where user_id = ? and app_id like ? and state = ? order by id limit ?").all(userId, `${appPrefix}%`, state, count) as { id: string }[]).map((r) => r.id),
    window: async (userId, appId) => {
      const usage = db.prepare("select spent_nanos, held_nanos from spend_usage where user_id = ? and app_id = ?").get(userId, appId) as { spent_nanos: bigint; held_nanos: bigint } | undefined;
      if (!usage) return undefined;
      const decided = db
        .prepare("select count(case when state <> 'DECLINED' then 1 end) as approved, count(case when state = 'DECLINED' then 1 end) as declined, coalesce(sum(case when state <> 'DECLINED' then amount_nanos end), 0) as approved_nanos from spend_authorizations where user_id = ? and app_id = ?")
        .get(userId, appId) as { approved: bigint; declined: bigint; approved_nanos: bigint };
      return { spentNanos: usage.spent_nanos, heldNanos: usage.held_nanos, approved: Number(decided.approved), declined: Number(decided.declined), approvedNanos: decided.approved_nanos };
    },
    close: async () => void db.close(),
  };
}
