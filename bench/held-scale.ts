// `npm run bench:held`: what a decision's read of its window's usage costs as the window's open holds
// grow, against the sum over every open hold that it replaced (migration 0016), in the same run.
//
//   npm run bench:held -- [--db sqlite|postgres|both] [--holds 1000,10000,100000] [--reads <n>]
//
// For each count, that many pending holds of one window are written straight into a fresh database
// (the usage row's counter kept by its triggers), then `--reads` decisions' reads are
// timed, each in a write transaction of its own as a decision runs it: `lockWindow`, the server's
// own code (the lock, the sweep of the holds expired since the last one, the counter), and the
// baseline: the lock, then the sum of the window's unexpired holds. The clock moves 1 ms a read.
// Then the sweep: in a window of its own with as many holds, the one read that finds them all
// expired since its last (each hold is read once in its life, by such a sweep).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "kysely";
import { timeOrderedPrefix } from "../src/core/ids.js";
import { lockWindow, type WindowKey } from "../src/funds/spends/spend-usage.js";
import { openStorage, type Storage } from "../src/storage/connect.js";
import { writeTransaction } from "../src/storage/transactions.js";
import { createBenchDatabase, type Dialect } from "./database.js";

const NANOS = 1_000_000_000n;
const START = Date.parse("2026-11-10T12:00:00Z");
const KEY: WindowKey = { userId: "held-scale-user", appId: "held-scale-app", windowStart: "2026-11-01T00:00:00.000Z", windowEnd: "2026-12-01T00:00:00.000Z" };
const iso = (ms: number) => new Date(ms).toISOString();

/** The hour after START in which the holds expire: after every read of the run. */
const EXPIRY = START + 3_600_000;

/** Adds holds until window `key` has `count`, each 1.00, expiring in turn from EXPIRY (the triggers of migration 0016 count them). */
async function addHolds(storage: Storage, from: number, count: number, key: WindowKey = KEY): Promise<void> {
  for (let i = from; i < count; i += 1000) {
    const rows = Array.from({ length: Math.min(1000, count - i) }, (_, j) => ({
      // Time-ordered, as every authorization id is (a window's seed finds its spends by their ids).
      id: `${timeOrderedPrefix(START)}${key.appId}-${String(i + j).padStart(9, "0")}`,
      user_id: key.userId,
      app_id: key.appId,
      currency_code: "USD",
      amount_nanos: NANOS,
      captured_nanos: 0n,
      reversed_nanos: 0n,
      state: "PENDING",
      expires_at: iso(EXPIRY + i + j),
      window_start: key.windowStart,
      window_end: key.windowEnd,
      decision: "{}",
      metadata: "{}",
      created_at: iso(START),
      updated_at: iso(START),
    }));
    await storage.db.insertInto("spend_authorizations").values(rows).execute();
  }
}

/** The baseline: the lock (SQLite's write transaction holds it), then the sum of every unexpired pending hold of the window. */
async function lockAndSum(storage: Storage, dialect: Dialect, nowIso: string): Promise<void> {
  await writeTransaction(storage, { exclusive: [] }, async (db) => {
    if (dialect === "postgres") await sql`select spend_lock_subject_app(${KEY.userId}, ${KEY.appId})`.execute(db);
    await db
      .selectFrom("spend_authorizations")
      .select(sql<string>`cast(coalesce(sum(amount_nanos), 0) as text)`.as("held"))
      .where("user_id", "=", KEY.userId)
      .where("app_id", "=", KEY.appId)
      .where(sql<boolean>`state = 'PENDING'`)
      .where("expires_at", ">", nowIso)
      .where("created_at", ">=", KEY.windowStart)
      .where("created_at", "<", KEY.windowEnd)
      .execute();
  });
}

const decisionRead = (storage: Storage, dialect: Dialect, key: WindowKey, nowIso: string) =>
  writeTransaction(storage, { exclusive: [] }, (db) => lockWindow(db, dialect, key, nowIso));

/**
 * µs of the sweep that finds `count` holds expired: a window of its own, read once before they
 * expire (its counter then counts them all), is read again past the last one's expiry.
 */
async function sweepOf(storage: Storage, dialect: Dialect, count: number): Promise<number> {
  const key = { ...KEY, appId: `held-scale-sweep-${count}` };
  await decisionRead(storage, dialect, key, iso(START));
  await addHolds(storage, 0, count, key);
  if (dialect === "postgres") await sql`analyze spend_authorizations`.execute(storage.db);
  await decisionRead(storage, dialect, key, iso(START + 1));
  const started = process.hrtime.bigint();
  const usage = await decisionRead(storage, dialect, key, iso(EXPIRY + count));
  const micros = Number(process.hrtime.bigint() - started) / 1000;
  if (usage.held !== 0n) throw new Error(`the sweep left ${usage.held} nanos held in ${key.appId}`);
  return micros;
}

async function timed(reads: number, read: (nowIso: string) => Promise<unknown>, clock: { ms: number }): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < reads; i++) await read(iso(++clock.ms));
  return Number(process.hrtime.bigint() - started) / 1000 / reads;
}

async function run(dialect: Dialect, counts: number[], reads: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "held-scale-"));
  const database = await createBenchDatabase(dialect, dir);
  const storage = await openStorage(database.config);
  try {
    const at = iso(START);
    await storage.db.insertInto("users").values({ id: KEY.userId, display_name: "held scale", email: "held@bench.example", email_key: "held@bench.example", roles: '["ROLE_USER"]', created_at: at, updated_at: at }).execute();
    await writeTransaction(storage, { exclusive: [] }, (db) => lockWindow(db, dialect, KEY, at));
    console.log(`\n${await database.describe()}: µs per decision's read of its window (${reads} reads each, a write transaction each)\n`);
    console.log("| open holds in the window | lock, then the sum of the open holds (before 0016) | lockWindow: lock, sweep, counter | the read that sweeps them all, once expired |");
    console.log("| ---: | ---: | ---: | ---: |");
    const clock = { ms: START };
    let holds = 0;
    for (const count of counts) {
      await addHolds(storage, holds, count);
      holds = count;
      if (dialect === "postgres") await sql`analyze spend_authorizations`.execute(storage.db);
      // A few of each first, so that both run on warm statements and pages.
      await timed(20, (now) => lockAndSum(storage, dialect, now), clock);
      await timed(20, (now) => decisionRead(storage, dialect, KEY, now), clock);
      const before = await timed(reads, (now) => lockAndSum(storage, dialect, now), clock);
      const after = await timed(reads, (now) => decisionRead(storage, dialect, KEY, now), clock);
      const sweep = await sweepOf(storage, dialect, count);
      console.log(`| ${count.toLocaleString("en-US")} | ${before.toFixed(1)} | ${after.toFixed(1)} | ${sweep.toFixed(1)} |`);
    }
  } finally {
    await storage.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const { values } = parseArgs({ options: { db: { type: "string", default: "both" }, holds: { type: "string", default: "1000,10000,100000" }, reads: { type: "string", default: "200" } } });
const counts = values.holds.split(",").map(Number);
const reads = Number(values.reads);
if (counts.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(reads) || reads < 1) throw new Error("--holds takes positive integers, --reads a positive integer");
for (const dialect of (values.db === "both" ? ["sqlite", "postgres"] : [values.db]) as Dialect[]) await run(dialect, counts, reads);
